"""The in-image tools where no GPU is attached: verify's table and exit codes,
gpumon's message without a driver, the bench smoke ladder, and the train helpers."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from pudev.image.record import ImageRecord


def _pudev(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["pudev", *args], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.nogpu
def test_verify_without_a_gpu_fails_with_the_fix(no_gpu: None) -> None:
    result = _pudev("verify")
    assert result.returncode == 1, result.stdout
    rows = {line.split()[0] + " " + line.split()[1]: line for line in result.stdout.splitlines()
            if line.startswith(("gpu visible", "torch build", "shared memory", "toolkit vs"))}
    assert "FAIL" in rows["gpu visible"]
    assert "fix (gpu visible): run the container with `docker run --gpus all ...`" in result.stdout
    assert " ok " in rows["torch build"]


def test_verify_cpu_mode_and_json(record: ImageRecord) -> None:
    result = _pudev("verify", "--cpu", "--json")
    report = json.loads(result.stdout)
    checks = {check["name"]: check for check in report["checks"]}
    assert checks["torch build"]["status"] == "ok"
    minor_only = record.default_toolkit != record.cuda
    assert checks["toolkit vs torch"]["status"] == ("warn" if minor_only else "ok")
    assert checks["host compiler"]["status"] == "ok"
    assert checks["shared memory"]["status"] in ("ok", "warn", "fail")
    failing = [name for name, check in checks.items() if check["status"] == "fail"]
    assert result.returncode == (1 if failing else 0)
    assert report["facts"]["expected_cuda"] == record.cuda


@pytest.mark.nogpu
def test_gpumon_without_a_driver_says_so_cleanly(no_gpu: None) -> None:
    result = _pudev("gpumon")
    assert result.returncode == 1
    assert "no NVIDIA driver is visible in this container" in result.stderr
    assert "Traceback" not in result.stderr


def test_bench_smoke_runs_every_rung_and_writes_outputs(tmp_path: Path) -> None:
    result = _pudev("bench", "--smoke", "--out", str(tmp_path), "--data-dir", str(tmp_path / "data"),
                    "--no-progress", timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads((tmp_path / "bench.json").read_text())
    assert report["complete"] is True  # written after each rung, marked complete at the end
    assert [rung["name"] for rung in report["rungs"]] == ["baseline", "loader", "compile", "amp", "channels_last",
                                                          "checkpoint"]
    # From the loader rung on, workers send raw JPEG bytes and the batch is decoded after them, as on a GPU.
    assert [rung["settings"]["gpu_decode"] for rung in report["rungs"]] == [False] + [True] * 5
    assert report["rungs"][1]["workers"] >= 1
    for rung in report["rungs"]:
        assert rung["verdict"] == "ok", rung["name"]
        assert rung["median_step_s"] > 0 and len(rung["losses"]) == 6
    assert report["summary"]["all_learning"] is True
    assert (tmp_path / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    jpegs = list((tmp_path / "data").rglob("*.jpg"))
    assert len(jpegs) == 128 and jpegs[0].read_bytes()[:2] == b"\xff\xd8"  # real JPEG files on disk
    assert "speed-up" in result.stdout and "cpu (smoke: timings mean nothing)" in result.stdout


class _SlowDataset:  # map-style: what DataLoader needs of a dataset
    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> int:
        import time

        time.sleep(5)
        return index


def test_a_stalled_bench_loader_is_one_error_not_a_hang() -> None:
    from torch.utils.data import DataLoader

    from pudev.image.bench.ladder import LoaderStalledError, Rung, next_batch

    loader = DataLoader(_SlowDataset(), batch_size=2, num_workers=1, timeout=1)
    with pytest.raises(LoaderStalledError, match=r"^rung 1 \(loader\): DataLoader timed out after 1 seconds, so a "):
        next_batch(iter(loader), Rung(1, "loader"))
    assert next_batch(iter([(1, 2)]), Rung(0, "baseline")) == (1, 2)


@pytest.mark.nogpu
def test_bench_refuses_timing_runs_without_a_gpu(no_gpu: None) -> None:
    result = _pudev("bench")
    assert result.returncode == 2 and "pudev bench --smoke" in result.stderr


def test_train_helpers() -> None:
    from torch.utils.data import TensorDataset

    from pudev.image.train import MixedPrecision, enable_checkpointing, fast_loader, loader_workers, optimize_model

    dataset = TensorDataset(torch.randn(8, 3, 8, 8), torch.zeros(8, dtype=torch.long))
    loader = fast_loader(dataset, batch_size=4)
    assert loader.num_workers == loader_workers() and loader.persistent_workers and loader.prefetch_factor == 4
    model = optimize_model(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3)), channels_last=True)
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)
    amp = MixedPrecision("cpu")
    assert amp.dtype == torch.bfloat16 and not amp.scaler.is_enabled()
    from torchvision.models import resnet18

    checkpointed = enable_checkpointing(resnet18(num_classes=2))
    assert type(checkpointed.layer1).__name__ == "CheckpointedSequential"


@pytest.mark.platform
def test_verify_reports_cluster_networking() -> None:
    """The image carries the verbs libraries with their providers and an ssh client; verify says what
    it finds, and whether this container can open RDMA devices (the stand-in host has none)."""
    report = json.loads(_pudev("verify", "--cpu", "--json").stdout)
    checks = {check["name"]: check for check in report["checks"]}
    network = report["facts"]["network"]
    assert checks["rdma libraries"]["status"] == "ok", checks["rdma libraries"]
    assert network["verbs_library"].startswith("libibverbs.so.1.") and "mlx5" in network["verbs_providers"]
    assert checks["ssh client"]["status"] == "ok" and network["ssh_client"].startswith("OpenSSH_")
    expected = "ok" if network["uverbs_devices"] else ("warn" if network["rdma_devices"] else "skip")
    assert checks["rdma devices"]["status"] == expected, checks["rdma devices"]
    assert shutil.which("ibv_devinfo") and shutil.which("ssh")  # to look at the devices by hand; MPI launchers
