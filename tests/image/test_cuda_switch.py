"""cuda-switch in zsh and bash: the round trip, the warnings, and real nvcc builds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

from pudev.image.record import ImageRecord

REPORT = 'echo "CUDA_HOME=$CUDA_HOME"; echo "PATH=$PATH"; echo "LD=${LD_LIBRARY_PATH-unset}"; ' \
         'echo "FLAGS=${NVCC_PREPEND_FLAGS-unset}"; echo "NVCC=$(command -v nvcc)"'


def _interactive(shell: str, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shell, "-i", "-c", command], capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL, check=False)


def _values(output: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


def _other(record: ImageRecord) -> str:
    return next(t.version for t in record.toolkits if t.version != record.default_toolkit)


@pytest.mark.platform
@pytest.mark.parametrize("shell", ["zsh", "bash"])
def test_switch_and_back(shell: str, record: ImageRecord) -> None:
    other = record.toolkit(_other(record))
    result = _interactive(shell, f"LD_LIBRARY_PATH=/usr/local/nvidia/lib::/usr/local/cuda/lib64; "
                                 f"cuda-switch {other.version} && {REPORT}")
    assert result.returncode == 0, result.stderr
    after = _values(result.stdout)
    assert after["CUDA_HOME"] == other.path
    assert after["NVCC"] == f"{other.path}/bin/nvcc"
    assert after["PATH"].split(":")[0] == f"{other.path}/bin"
    assert "/usr/local/cuda/bin" not in after["PATH"].split(":")
    assert after["LD"] == "/usr/local/nvidia/lib"  # no empty entry, no toolkit lib64
    expected_flags = "unset" if other.host_compiler == "g++" else f"-ccbin {other.host_compiler}"
    assert after["FLAGS"] == expected_flags

    back = _interactive(shell, f"cuda-switch {other.version} && cuda-switch {record.default_toolkit} && {REPORT}")
    values = _values(back.stdout)
    assert values["CUDA_HOME"] == f"/usr/local/cuda-{record.default_toolkit}"
    assert values["FLAGS"] == "unset"
    assert values["PATH"].count("/usr/local/cuda") == 1


def test_switching_to_the_second_toolkit_warns_in_torchs_words(record: ImageRecord) -> None:
    """torch refuses a toolkit of another major (the 2024 line's 11.8 beside cu121) and only warns on
    another minor (the newest toolkit of torch's major): the switch says which, before a build does.
    It works (exit 0), so it is a warning, never an "error:" followed by success."""
    second = record.toolkit(_other(record))
    result = _interactive("zsh", f"cuda-switch {second.version}")
    assert result.returncode == 0
    assert "cuda-switch: warning:" in result.stderr and "error:" not in result.stderr
    if second.version.split(".")[0] != (torch.version.cuda or "").split(".")[0]:
        assert f"The detected CUDA version ({second.version}) mismatches the version that was used to compile" \
               in result.stderr
        assert "does not check CUDA versions at all" in result.stderr
    else:
        assert "minor version mismatch" in result.stderr and f"({second.version})" in result.stderr


def test_minor_mismatch_is_only_a_warning(record: ImageRecord) -> None:
    default = record.toolkit(record.default_toolkit)
    result = _interactive("bash", f"cuda-switch {default.version}")
    assert result.returncode == 0
    if default.version == record.cuda:
        assert "warning" not in result.stderr and "error" not in result.stderr
    else:
        assert "cuda-switch: warning:" in result.stderr and "minor version mismatch" in result.stderr


def test_list_shows_state_and_compares_with_torch(record: ImageRecord) -> None:
    result = _interactive("zsh", "cuda-switch --list")
    assert result.returncode == 0
    for toolkit in record.toolkits:
        assert toolkit.path in result.stderr
    assert f"active: CUDA {record.default_toolkit}" in result.stderr
    assert _interactive("zsh", "cuda-switch").stderr == result.stderr


def test_a_toolkit_gone_from_disk_is_shown_missing_and_refused(record: ImageRecord, tmp_path: Path) -> None:
    """The record says what was built in; cuda-switch believes the disk (tests/e2e deletes one for real)."""
    other = record.toolkit(_other(record))
    data = json.loads(Path("/etc/pudev/image.json").read_text())
    gone = tmp_path / f"cuda-{other.version}"
    for toolkit in data["toolkits"]:
        if toolkit["version"] == other.version:
            toolkit["path"] = str(gone)
    fake = tmp_path / "image.json"
    fake.write_text(json.dumps(data))
    listed = _interactive("bash", f"PUDEV_RECORD={fake} cuda-switch --list")
    assert f"{other.version}  {gone}  [missing: no {gone}/bin/nvcc]" in listed.stderr
    switched = _interactive("bash", f"PUDEV_RECORD={fake} cuda-switch {other.version}; echo rc=$?")
    assert f"CUDA {other.version} was built into this image but {gone}/bin/nvcc is gone" in switched.stderr
    assert "rc=2" in switched.stdout


def test_unknown_version_lists_the_installed_ones(record: ImageRecord) -> None:
    result = _interactive("bash", "cuda-switch 10.2; echo rc=$?")
    installed = ", ".join(t.version for t in record.toolkits)
    assert f"no CUDA 10.2 in this image; installed: {installed}" in result.stderr
    assert "rc=2" in result.stdout


@pytest.mark.parametrize("slot", [0, 1])
def test_nvcc_builds_after_switching(record: ImageRecord, slot: int, tmp_path: Path) -> None:
    toolkit = record.toolkits[slot]
    source = tmp_path / "probe.cu"
    source.write_text("__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\nint main() { return 0; }\n")
    # No -ccbin here: the switch alone must pick a host compiler this nvcc accepts.
    result = _interactive("zsh", f"cuda-switch {toolkit.version} 2>/dev/null && "
                                 f"nvcc -arch=sm_80 -o {tmp_path}/probe {source} && {tmp_path}/probe && echo built")
    assert result.stdout.strip().endswith("built"), result.stderr[-2000:]
