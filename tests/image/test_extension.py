"""Extensions build the way users build them, with each toolkit's own compiler."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch
from cuda_extension import TEST_ARCH, import_extension, setup_py_build

from pudev.image.record import ImageRecord

PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void noop() {}
int main() {
    // CUDART_VERSION comes from the toolkit's headers; linking pulls in its static runtime.
    int devices = 0;
    cudaError_t status = cudaGetDeviceCount(&devices);
    std::printf("headers %d runtime-says %s\n", CUDART_VERSION, cudaGetErrorName(status));
    return 0;
}
"""


@pytest.mark.platform
def test_cuda_extension_builds_and_its_host_entry_point_runs(built_extension: Path, record: ImageRecord) -> None:
    module = import_extension(built_extension)
    version = module.runtime_version()
    assert version // 1000 == int((torch.version.cuda or "0").split(".")[0]), version


def test_extension_build_warns_only_about_a_real_minor_mismatch(built_extension: Path, record: ImageRecord) -> None:
    log = " ".join((built_extension / "build.log").read_text().split())
    if record.default_toolkit == torch.version.cuda:  # an exact toolkit: torch has nothing to warn about
        assert "mismatch" not in log
    else:  # a stand-in toolkit of the same major
        assert (f"The detected CUDA version ({record.default_toolkit}) has a minor version mismatch with the "
                f"version that was used to compile PyTorch ({torch.version.cuda})") in log


def test_the_second_toolkit_builds_as_far_as_torch_lets_it(record: ImageRecord, tmp_path: Path) -> None:
    """torch's extension builder refuses a toolkit of another major (the 2024 line's 11.8 beside cu121) and
    builds with one of the same major, warning of the minor mismatch (the newest toolkit of torch's major)."""
    second = next(t for t in record.toolkits if t.version != record.default_toolkit)
    result = setup_py_build(tmp_path, {"CUDA_HOME": second.path, "TORCH_CUDA_ARCH_LIST": TEST_ARCH})
    message = " ".join((result.stdout + result.stderr).split())
    if second.version.split(".")[0] != (torch.version.cuda or "").split(".")[0]:
        assert result.returncode != 0
        formatted = (f"The detected CUDA version ({second.version}) mismatches the version that was used to "
                     f"compile PyTorch ({torch.version.cuda})")
        # torch 2.15 raises the template with its arguments unformatted: (..., '12.4', '13.2')
        template = "mismatches the version that was used to compilePyTorch (%s)"
        arguments = f"'{second.version}', '{torch.version.cuda}'"
        assert formatted in message or (template in message and arguments in message)
    else:
        assert result.returncode == 0, message[-2000:]
        assert f"The detected CUDA version ({second.version}) has a minor version mismatch" in message
        assert list(tmp_path.glob("pudev_test_extension*.so")), "the build reported success but left no module"


@pytest.mark.platform
@pytest.mark.parametrize("slot", [0, 1])
def test_nvcc_compiles_and_links_with_the_selected_host_compiler(record: ImageRecord, slot: int,
                                                                 tmp_path: Path) -> None:
    toolkit = record.toolkits[slot]
    source = tmp_path / "probe.cu"
    source.write_text(PROGRAM)
    nvcc = f"{toolkit.path}/bin/nvcc"
    subprocess.run([nvcc, "-ccbin", toolkit.host_compiler, "-arch=sm_80", "-o", str(tmp_path / "probe"), str(source)],
                   check=True, capture_output=True, text=True, timeout=600)
    output = subprocess.run([str(tmp_path / "probe")], capture_output=True, text=True, check=True).stdout
    major, minor = toolkit.version.split(".")
    headers, _, answer = output.strip().partition(" runtime-says ")
    assert headers == f"headers {int(major) * 1000 + int(minor) * 10}"
    # With a GPU: cudaSuccess; without one the linked runtime still answers with a named error.
    assert answer.startswith("cuda"), answer


def test_toolkits_needing_an_older_gcc_refuse_the_default_one(record: ImageRecord, tmp_path: Path) -> None:
    """Why the image selects host compilers: nvcc rejects a too-new default g++."""
    source = tmp_path / "probe.cu"
    source.write_text(PROGRAM)
    for toolkit in record.toolkits:
        if toolkit.host_compiler == "g++":
            continue
        result = subprocess.run([f"{toolkit.path}/bin/nvcc", "-ccbin", "g++", "-c", str(source), "-o",
                                 str(tmp_path / "probe.o")], check=False, capture_output=True, text=True, timeout=600)
        assert result.returncode != 0
        assert "unsupported GNU version" in result.stdout + result.stderr
