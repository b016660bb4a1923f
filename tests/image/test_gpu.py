"""GPU checks. Each needs a GPU (the `gpu` fixture skips or, under
PUDEV_REQUIRE_GPU=1, fails without one)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from cuda_extension import build_extension, import_extension

pytestmark = pytest.mark.gpu


def test_cuda_is_available(gpu: str) -> None:
    assert torch.cuda.is_available()
    assert torch.cuda.device_count() >= 1


def test_matmul_on_gpu_matches_cpu(gpu: str) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(512, 512, generator=generator, dtype=torch.float32)
    b = torch.randn(512, 512, generator=generator, dtype=torch.float32)
    expected = a @ b
    actual = (a.to(gpu) @ b.to(gpu)).cpu()
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-3)


def test_cudnn_enabled_and_runs_a_convolution(gpu: str) -> None:
    assert torch.backends.cudnn.is_available()
    assert torch.backends.cudnn.enabled
    assert (torch.backends.cudnn.version() or 0) > 0
    conv = torch.nn.Conv2d(3, 8, 3).to(gpu)
    out = conv(torch.randn(2, 3, 32, 32, device=gpu))
    assert out.shape == (2, 8, 30, 30)


def test_nvidia_smi_lists_the_gpu(gpu: str) -> None:
    assert shutil.which("nvidia-smi"), "nvidia-smi is mounted by the NVIDIA container toolkit"
    output = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=True, timeout=60).stdout
    assert output.startswith("GPU 0:")


def test_nvml_reports_memory(gpu: str) -> None:
    import pynvml

    pynvml.nvmlInit()
    try:
        memory = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0))
        assert memory.total > 0
        assert 0 <= memory.used <= memory.total
    finally:
        pynvml.nvmlShutdown()


def test_extension_kernel_runs_on_the_gpu(gpu: str, built_extension: Path) -> None:
    module = import_extension(built_extension)
    data = torch.arange(1000, dtype=torch.float32, device=gpu)
    torch.testing.assert_close(module.add_one(data).cpu(), torch.arange(1000, dtype=torch.float32) + 1)


def test_extension_built_for_another_gpu_raises_instead_of_returning_wrong_numbers(gpu: str, tmp_path: Path) -> None:
    major, _ = torch.cuda.get_device_capability()
    foreign = "9.0" if major == 8 else "8.0"  # machine code of another major never runs, and no PTX goes in
    built = build_extension(tmp_path, {"TORCH_CUDA_ARCH_LIST": foreign, "CCACHE_DIR": str(tmp_path / "ccache")})
    # Its own process: the session's module of the same name is already imported here.
    run = subprocess.run([sys.executable, "-c", "import torch, pudev_test_extension as m; "
                          "m.add_one(torch.zeros(4, device='cuda'))"], cwd=built, capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode != 0
    assert "add_one kernel failed: no kernel image is available for execution on the device" in run.stderr, \
        run.stderr[-2000:]


def test_verify_passes_on_a_gpu(gpu: str) -> None:
    import json

    result = subprocess.run(["pudev", "verify", "--json"], capture_output=True, text=True, timeout=300, check=False)
    checks = {check["name"]: check for check in json.loads(result.stdout)["checks"]}
    for name in ("gpu visible", "driver vs torch", "torch build", "cudnn", "nccl", "pinned memory"):
        assert checks[name]["status"] == "ok", checks[name]
    failing = [name for name, check in checks.items() if check["status"] == "fail"]
    assert result.returncode == (1 if failing else 0)
    assert failing in ([], ["shared memory"]), failing  # only a run started without --shm-size may fail here


def test_gpumon_reads_the_gpu(gpu: str) -> None:
    import json

    result = subprocess.run(["pudev", "gpumon", "--json"], capture_output=True, text=True, timeout=120, check=True)
    data = json.loads(result.stdout)
    assert data["driver"] and data["gpus"][0]["memory_total"] > 0
    assert 0 <= data["gpus"][0]["utilization"] <= 100


def test_bench_ladder_on_the_gpu(gpu: str, tmp_path: Path) -> None:
    import json

    # Every rung on the GPU, small enough for a test (four torch.compile graphs); the
    # ResNet-50 ladder itself is the benchmark, `pudev bench`, not a test.
    result = subprocess.run(["pudev", "bench", "--model", "tiny", "--image-size", "64", "--batch-size", "32",
                             "--images", "256", "--warmup", "3", "--steps", "5", "--out", str(tmp_path),
                             "--data-dir", str(tmp_path / "data"), "--no-progress"],
                            capture_output=True, text=True, timeout=1800, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads((tmp_path / "bench.json").read_text())
    assert report["complete"] is True  # written after each rung, marked complete at the end
    assert report["device"] == torch.cuda.get_device_name()
    assert [rung["rung"] for rung in report["rungs"]] == [0, 1, 2, 3, 4, 5]
    assert all(rung["peak_memory_bytes"] > 0 and rung["gpu_utilization"] is not None for rung in report["rungs"])
    assert (tmp_path / "bench.png").stat().st_size > 0
