"""scripts/gpu-check.sh, the one script for a machine with a GPU, rehearsed in
the built image without one. Every step must run, and fail the way strict mode
says it must, so that a GPU session spends its minutes on the GPU and not on
the script."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from e2e_support import LocalImage

from pudev.engine import docker
from pudev.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.slow]

# What the device tool brings back: at most 8 files.
RETURNED_FILES = {"checks.log", "verify.json", "gpu-tests.log", "bench.log"}


def _gpu_check(image: LocalImage, out: Path, budget_s: int) -> str:
    out.mkdir()
    result = docker.run(["run", "--rm", "--user", "0", "--volume", f"{REPO_ROOT}:/src:ro", "--volume",
                         f"{out}:/out", "--workdir", "/src", "--env", "OUT=/out", "--env",
                         f"GPU_CHECK_SECONDS={budget_s}", image.tag, "sh", "scripts/gpu-check.sh"],
                        check=False, timeout=900)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.mark.allow_log(r"^ERROR tests/image/", r"ERROR at setup of test_")  # the strict failures it asks for
def test_without_a_gpu_every_step_runs_and_fails_strictly(newest_image: LocalImage, tmp_path: Path) -> None:
    out = tmp_path / "out"
    stdout = _gpu_check(newest_image, out, budget_s=600)
    assert "gpu-check: FAILED: verify gpumon gpu-tests bench-resnet50 bench-vit_b_16 (" in stdout
    assert {path.name for path in out.iterdir()} == RETURNED_FILES

    # The GPU half: all of test_gpu.py (marked as a module) and gpu-marked tests elsewhere, such as pudev dist's.
    image_tests = REPO_ROOT / "tests/image"
    gpu_tests = (image_tests / "test_gpu.py").read_text().count("\ndef test_") + sum(
        path.read_text().count("@pytest.mark.gpu\ndef test_") for path in image_tests.glob("test_*.py")
        if path.name != "test_gpu.py")
    log = (out / "gpu-tests.log").read_text()
    assert re.search(rf"\b{gpu_tests} (failed|errors)\b", log), log[-2000:]
    assert " passed" not in log and " skipped" not in log
    assert "PUDEV_REQUIRE_GPU=1 but no GPU visible" in log

    verify = {check["name"]: check for check in json.loads((out / "verify.json").read_text())["checks"]}
    assert verify["gpu visible"]["status"] == "fail"
    # The device record the script writes describes this machine: torch's CUDA, the toolkit's nvcc and gcc limit.
    assert verify["torch build"]["status"] == "ok"
    assert verify["toolkit vs torch"]["status"] in ("ok", "warn")
    assert verify["host compiler"]["status"] == "ok"

    checks = (out / "checks.log").read_text()
    assert "== verify: exit 1" in checks
    assert "pudev gpumon: no NVIDIA driver is visible" in checks and "== gpumon: exit 1" in checks
    bench = (out / "bench.log").read_text()
    assert bench.count("pudev bench: no GPU visible, and timing claims need one") == 2


def test_a_spent_budget_runs_nothing_and_says_so(newest_image: LocalImage, tmp_path: Path) -> None:
    stdout = _gpu_check(newest_image, tmp_path / "out", budget_s=0)
    assert "== verify: not run, the 0s budget is spent" in stdout
    assert "== bench-vit_b_16: skipped" in stdout
    assert ("FAILED: verify(not-run) gpumon(not-run) gpu-tests(not-run) bench-resnet50(not-run) "
            "bench-vit_b_16(not-run)") in stdout
