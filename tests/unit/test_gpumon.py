"""gpumon against a fake NVML layer."""

from __future__ import annotations

import json

import pytest

from pudev.image.gpumon import main
from pudev.image.nvml import GpuProcess, GpuSnapshot, NvmlUnavailableError

GIB = 1024**3


class FakeNvml:
    closed = 0

    def __init__(self) -> None:
        self.calls = 0

    def driver_version(self) -> str:
        return "550.54.15"

    def utilization(self, index: int) -> int:
        return 87

    def snapshot(self) -> list[GpuSnapshot]:
        self.calls += 1
        return [GpuSnapshot(0, "NVIDIA H200", 87, 40 * GIB, 141 * GIB, 51, 412.5, 700.0,
                            [GpuProcess(4242, "python", 39 * GIB)])]

    def close(self) -> None:
        FakeNvml.closed += 1


def test_table_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([], source_factory=FakeNvml) == 0
    out = capsys.readouterr().out
    assert "driver 550.54.15, 1 GPU(s)" in out
    for expected in ("NVIDIA H200", "87%", "40.0/141.0 GiB", "51 C", "412/700 W", "python(4242) 39.0G"):
        assert expected in out


def test_json_refreshes(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    before = FakeNvml.closed
    assert main(["--json", "--interval", "0.5", "--count", "3"], source_factory=FakeNvml) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3
    gpu = json.loads(lines[0])["gpus"][0]
    assert gpu["utilization"] == 87 and gpu["processes"][0]["pid"] == 4242
    assert FakeNvml.closed == before + 1


def test_no_driver_is_a_clean_message(capsys: pytest.CaptureFixture[str]) -> None:
    def missing() -> FakeNvml:
        raise NvmlUnavailableError("no NVIDIA driver is visible in this container: run it with `--gpus all` ...")

    assert main([], source_factory=missing) == 1
    err = capsys.readouterr().err
    assert err.startswith("pudev gpumon: no NVIDIA driver is visible") and "Traceback" not in err
