"""The in-image suite: runs INSIDE the built container (`pudev selftest`).

It checks the image against its own record (/etc/pudev/image.json). GPU tests
carry the `gpu` marker and skip with a reason when no GPU is attached;
PUDEV_REQUIRE_GPU=1 turns that skip into a failure. Tests of the no-GPU
experience carry `nogpu` and skip where a GPU is attached. No other test may
skip: any other skip is reported as a failure.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

from pudev.image.record import ImageRecord, load

HALF_PROPERTY = "pudev.half"  # read by pudev.testing.suite_run.tally
NO_GPU_REASON = (
    "no GPU visible in the container: run it with `--gpus all` on a host with an NVIDIA driver "
    "and the NVIDIA container toolkit"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (skips without one unless PUDEV_REQUIRE_GPU=1)")
    config.addinivalue_line("markers", "smoke: the quick core checks (versions, torch, toolkits), run on pulled images")
    config.addinivalue_line("markers", "platform: proves the image on its platform (toolkits, compilers, a CUDA "
                                       "extension, shells, tools); all an emulated platform runs (--platform-only)")
    config.addinivalue_line("markers", "nogpu: checks what users see without a GPU (skips where one is attached)")
    config.addinivalue_line("markers", "anyuser: holds for any user id, with or without the entrypoint "
                                       "(tests/e2e runs these as other uids: pudev selftest -- -m anyuser)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Each test's half in the JUnit report, so `pudev test` tallies a gpu-marked test outside test_gpu.py
    # (pudev dist's NCCL checks) in the GPU half that `--gpu-only` runs, not in the CPU half.
    for item in items:
        item.user_properties.append((HALF_PROPERTY, "gpu" if item.get_closest_marker("gpu") else "cpu"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    may_skip = item.get_closest_marker("gpu") is not None or item.get_closest_marker("nogpu") is not None
    if report.skipped and not may_skip and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"only GPU tests may skip in the image suite; {item.nodeid} skipped: {report.longrepr}"
    return report


@pytest.fixture(scope="session")
def record() -> ImageRecord:
    return load()


@pytest.fixture(scope="session")
def gpu() -> str:
    """The CUDA device to use; skips (or fails under PUDEV_REQUIRE_GPU=1) without one."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if os.environ.get("PUDEV_REQUIRE_GPU") == "1":
        pytest.fail(f"PUDEV_REQUIRE_GPU=1 but {NO_GPU_REASON}")
    pytest.skip(NO_GPU_REASON)


@pytest.fixture(scope="session")
def no_gpu() -> None:
    """For checks of the no-GPU experience; test_gpu.py covers the same tools with a GPU."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is attached: test_gpu.py checks this tool's GPU behaviour instead")


@pytest.fixture(scope="session")
def extension_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("extension")


# A compiler cache kept between runs, where the runner mounts one (`pudev test` passes the host's
# PUDEV_SUITE_CCACHE_DIR on): e2e gives one to the emulated platform scope, where the cold build takes
# six minutes, keyed by the toolkit images, so it compiles cold whenever a compiler changes.
KEPT_CCACHE = "PUDEV_SUITE_CCACHE_DIR"


@pytest.fixture(scope="session")
def extension_cache(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of the session's one cold extension build: a compiler cache of its own, which that
    build alone fills (test_compile_workshop.py then builds again from it, instead of a second cold build)."""
    from cuda_extension import extension_arch

    cache = os.environ.get(KEPT_CCACHE) or str(tmp_path_factory.mktemp("extension-ccache"))
    return {**os.environ, "CCACHE_DIR": cache, "TORCH_CUDA_ARCH_LIST": extension_arch()}


@pytest.fixture(scope="session")
def built_extension(extension_dir: Path, extension_cache: dict[str, str]) -> Path:
    """The tiny CUDA extension, built once per session against the default toolkit."""
    from cuda_extension import build_extension

    return build_extension(extension_dir, extension_cache)
