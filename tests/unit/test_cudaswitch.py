"""cuda-switch decisions, with a recorded image record (no toolkit needed)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from pudev.image.cudaswitch import EVAL_MARKER, environment_for, judge, main, shell_assignments, status_lines
from pudev.image.record import ImageRecord, ToolkitRecord


def _record(root: Path) -> ImageRecord:
    """A record whose toolkits live under `root`, each with an nvcc on disk."""
    toolkits = [ToolkitRecord("11.8", f"{root}/cuda-11.8", 11, "g++-11", "7.0;8.0+PTX"),
                ToolkitRecord("12.1", f"{root}/cuda-12.1", 12, "g++", "8.0;9.0+PTX")]
    for toolkit in toolkits:
        nvcc = Path(toolkit.path, "bin", "nvcc")
        nvcc.parent.mkdir(parents=True)
        nvcc.write_text("")
    return ImageRecord(variant="cu121", image="x", torch="2.5.1", cuda="12.1", python="3.11", default_toolkit="12.1",
                       cuda_arch_list="8.0;9.0+PTX", cxx_standard="c++17", mirror="none", build_mirror="none",
                       user="dev", toolkits=toolkits)


@pytest.fixture
def record(tmp_path: Path) -> ImageRecord:
    return _record(tmp_path)


def test_judge_major_minor_and_match() -> None:
    assert judge("11.8", "12.1").level == "fail"
    assert "mismatches the version that was used to compile PyTorch (12.1)" in judge("11.8", "12.1").message
    assert judge("12.4", "12.1").level == "warn"
    assert "minor version mismatch" in judge("12.4", "12.1").message
    assert judge("12.1", "12.1").level == "ok"


def test_environment_cleans_paths_and_sets_the_host_compiler(record: ImageRecord) -> None:
    env = {"PATH": "/usr/local/cuda/bin:/opt/conda/bin::/usr/local/cuda-12.1/bin:/usr/bin",
           "LD_LIBRARY_PATH": "/usr/local/nvidia/lib::/usr/local/cuda-12.1/lib64:",
           "NVCC_PREPEND_FLAGS": "-ccbin g++-12 -lineinfo", "TORCH_CUDA_ARCH_LIST": "8.0;9.0+PTX"}
    old = record.toolkit("11.8")
    changes = environment_for(record, old, env)
    assert changes["CUDA_HOME"] == old.path
    assert changes["PATH"] == f"{old.path}/bin:/opt/conda/bin:/usr/bin"
    assert changes["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib"
    assert changes["NVCC_PREPEND_FLAGS"] == "-ccbin g++-11 -lineinfo"
    assert changes["TORCH_CUDA_ARCH_LIST"] == "7.0;8.0+PTX"  # the toolkit's own list
    previous = {"PATH": str(changes["PATH"]), "NVCC_PREPEND_FLAGS": "-ccbin g++-11",
                "TORCH_CUDA_ARCH_LIST": "7.0;8.0+PTX"}
    back = environment_for(record, record.toolkit("12.1"), previous)
    assert back["NVCC_PREPEND_FLAGS"] is None and back["LD_LIBRARY_PATH"] is None
    assert back["TORCH_CUDA_ARCH_LIST"] == "8.0;9.0+PTX"


def test_a_users_own_arch_list_is_kept(record: ImageRecord) -> None:
    changes = environment_for(record, record.toolkit("11.8"), {"TORCH_CUDA_ARCH_LIST": "8.6"})
    assert changes["TORCH_CUDA_ARCH_LIST"] == "8.6"


def test_shell_assignments_quote_and_unset() -> None:
    text = shell_assignments({"CUDA_HOME": "/a b", "NVCC_PREPEND_FLAGS": None})
    assert text == "export CUDA_HOME='/a b'\nunset NVCC_PREPEND_FLAGS"


def test_status_marks_the_active_toolkit(record: ImageRecord) -> None:
    lines = status_lines(record, {"CUDA_HOME": record.toolkit("12.1").path})
    assert lines[0].startswith("  11.8") and "[fail]" in lines[0]
    assert lines[1].startswith("* 12.1") and "[ok]" in lines[1]
    assert lines[2].startswith("active: CUDA 12.1")
    assert "does not check CUDA versions at all" in lines[-1]


@pytest.fixture
def record_file(tmp_path: Path, record: ImageRecord) -> Path:
    path = tmp_path / "image.json"
    path.write_text(json.dumps(asdict(record)))
    return path


def test_cli_unknown_version(record_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["10.2"], {}, record_file) == 2
    assert capsys.readouterr().err.strip() == "cuda-switch: no CUDA 10.2 in this image; installed: 11.8, 12.1"


def test_cli_switch_prints_assignments_and_a_warning_not_an_error(record_file: Path, record: ImageRecord,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["11.8"], {"PATH": "/usr/bin", EVAL_MARKER: "1"}, record_file) == 0
    captured = capsys.readouterr()
    assert f"export CUDA_HOME={record.toolkit('11.8').path}" in captured.out
    assert "cuda-switch: warning: CUDA 11.8 does not match torch's CUDA" in captured.err
    assert "nvcc uses g++-11" in captured.err and "error" not in captured.err
    assert "eval" not in captured.err
    assert main(["11.8"], {"PATH": "/usr/bin"}, record_file) == 0  # run as a program, not through the function
    assert 'apply it with: eval "$(cuda-switch 11.8)"' in capsys.readouterr().err


def test_a_toolkit_gone_from_disk_is_missing_and_cannot_be_chosen(record_file: Path, record: ImageRecord,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    gone = record.toolkit("11.8")
    Path(gone.path, "bin", "nvcc").unlink()
    assert main(["--list"], {"CUDA_HOME": gone.path}, record_file) == 0
    listed = capsys.readouterr().err.splitlines()
    assert listed[0] == f"* 11.8  {gone.path}  [missing: no {gone.path}/bin/nvcc]"
    assert "but it is missing from disk; switch to an installed one: 12.1" in listed[2]
    assert main(["11.8"], {}, record_file) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (f"cuda-switch: CUDA 11.8 was built into this image but {gone.path}/bin/nvcc is "
                                    "gone; installed: 12.1")


def test_the_list_fails_when_no_toolkit_is_left(record_file: Path, record: ImageRecord,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`cuda-switch --list && ...` in a script must not go on as if a toolkit were there."""
    for toolkit in record.toolkits:
        Path(toolkit.path, "bin", "nvcc").unlink()
    assert main(["--list"], {}, record_file) == 1
    listed = capsys.readouterr().err
    assert listed.count("[missing: no ") == len(record.toolkits)
