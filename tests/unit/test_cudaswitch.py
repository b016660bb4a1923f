"""cuda-switch decisions, with a recorded image record (no toolkit needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pudev.image.cudaswitch import environment_for, judge, main, shell_assignments, status_lines
from pudev.image.record import ImageRecord, ToolkitRecord

RECORD = ImageRecord(
    variant="cu121", image="x", torch="2.5.1", cuda="12.1", python="3.11", default_toolkit="12.1",
    cuda_arch_list="8.0", mirror="none", build_mirror="none", user="dev",
    toolkits=[ToolkitRecord("11.8", "/usr/local/cuda-11.8", 11, "g++-11"),
              ToolkitRecord("12.1", "/usr/local/cuda-12.1", 12, "g++")],
)


def test_judge_major_minor_and_match() -> None:
    assert judge("11.8", "12.1").level == "error"
    assert "mismatches the version that was used to compile PyTorch (12.1)" in judge("11.8", "12.1").message
    assert judge("12.4", "12.1").level == "warning"
    assert "minor version mismatch" in judge("12.4", "12.1").message
    assert judge("12.1", "12.1").level == "ok"


def test_environment_cleans_paths_and_sets_the_host_compiler() -> None:
    env = {"PATH": "/usr/local/cuda/bin:/opt/conda/bin::/usr/local/cuda-12.1/bin:/usr/bin",
           "LD_LIBRARY_PATH": "/usr/local/nvidia/lib::/usr/local/cuda-12.1/lib64:",
           "NVCC_PREPEND_FLAGS": "-ccbin g++-12 -lineinfo"}
    changes = environment_for(RECORD.toolkit("11.8"), env)
    assert changes["CUDA_HOME"] == "/usr/local/cuda-11.8"
    assert changes["PATH"] == "/usr/local/cuda-11.8/bin:/opt/conda/bin:/usr/bin"
    assert changes["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib"
    assert changes["NVCC_PREPEND_FLAGS"] == "-ccbin g++-11 -lineinfo"
    previous = {"PATH": str(changes["PATH"]), "NVCC_PREPEND_FLAGS": "-ccbin g++-11"}
    back = environment_for(RECORD.toolkit("12.1"), previous)
    assert back["NVCC_PREPEND_FLAGS"] is None and back["LD_LIBRARY_PATH"] is None


def test_shell_assignments_quote_and_unset() -> None:
    text = shell_assignments({"CUDA_HOME": "/a b", "NVCC_PREPEND_FLAGS": None})
    assert text == "export CUDA_HOME='/a b'\nunset NVCC_PREPEND_FLAGS"


def test_status_marks_the_active_toolkit() -> None:
    lines = status_lines(RECORD, {"CUDA_HOME": "/usr/local/cuda-12.1"})
    assert lines[0].startswith("  11.8") and "[error]" in lines[0]
    assert lines[1].startswith("* 12.1") and "[ok]" in lines[1]
    assert lines[2].startswith("active: CUDA 12.1")
    assert "does not check CUDA versions at all" in lines[-1]


@pytest.fixture
def record_file(tmp_path: Path) -> Path:
    path = tmp_path / "image.json"
    data = json.loads(json.dumps(RECORD, default=lambda o: o.__dict__))
    path.write_text(json.dumps(data))
    return path


def test_cli_unknown_version(record_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["10.2"], {}, record_file) == 2
    assert capsys.readouterr().err.strip() == "cuda-switch: no CUDA 10.2 in this image; installed: 11.8, 12.1"


def test_cli_switch_prints_assignments_and_the_error(record_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["11.8"], {"PATH": "/usr/bin"}, record_file) == 0
    captured = capsys.readouterr()
    assert "export CUDA_HOME=/usr/local/cuda-11.8" in captured.out
    assert "cuda-switch: error:" in captured.err and "nvcc uses g++-11" in captured.err
