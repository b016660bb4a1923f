"""Both CUDA toolkits are complete, the right versions, and wired up as promised."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pudev.image.record import ImageRecord, gcc_major

pytestmark = [pytest.mark.smoke, pytest.mark.platform]


def _run(*command: str) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=120).stdout


def test_record_names_two_toolkits_including_the_default(record: ImageRecord) -> None:
    assert len(record.toolkits) == 2
    assert record.default_toolkit in {toolkit.version for toolkit in record.toolkits}


@pytest.mark.parametrize("slot", [0, 1])
def test_toolkit_versions_agree(record: ImageRecord, slot: int) -> None:
    toolkit = record.toolkits[slot]
    top = Path(toolkit.path)
    version_json = json.loads((top / "version.json").read_text())
    assert version_json["cuda"]["version"].startswith(toolkit.version + ".")
    assert f"release {toolkit.version}," in _run(str(top / "bin/nvcc"), "--version")
    assert f"V{toolkit.version}." in _run(str(top / "bin/ptxas"), "--version")


@pytest.mark.parametrize("slot", [0, 1])
def test_toolkit_keeps_what_extension_builds_link(record: ImageRecord, slot: int) -> None:
    top = Path(record.toolkits[slot].path)
    for needed in ("lib64/libcudart_static.a", "lib64/libcudadevrt.a", "lib64/libcudart.so",
                   "include/cuda_runtime.h", "include/cublas_v2.h", "nvvm/libdevice/libdevice.10.bc"):
        assert (top / needed).exists(), needed
    leftovers = [p.name for p in (top / "lib64").glob("*.a") if p.name not in ("libcudart_static.a", "libcudadevrt.a")]
    assert not leftovers, f"static libraries the prune step should have dropped: {leftovers}"


def test_cuda_home_path_and_link_point_at_the_default_toolkit(record: ImageRecord) -> None:
    from torch.utils import cpp_extension

    default = f"/usr/local/cuda-{record.default_toolkit}"
    assert os.environ["CUDA_HOME"] == default
    assert os.path.realpath("/usr/local/cuda") == default
    assert os.path.realpath(shutil.which("nvcc") or "") == os.path.realpath(f"{default}/bin/nvcc")
    assert default == cpp_extension.CUDA_HOME


def test_default_toolkit_matches_torch_major_version(record: ImageRecord) -> None:
    import torch

    assert record.default_toolkit.split(".")[0] == (torch.version.cuda or "").split(".")[0]


def test_arch_list_set_for_builds_without_a_gpu(record: ImageRecord) -> None:
    default = record.toolkit(record.default_toolkit)
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == record.cuda_arch_list == default.arch_list
    assert re.fullmatch(r"\d+\.\d+[af]?(\+PTX)?(;\d+\.\d+[af]?(\+PTX)?)*", record.cuda_arch_list)


@pytest.mark.parametrize("slot", [0, 1])
def test_each_toolkits_arch_list_is_what_its_nvcc_compiles(record: ImageRecord, slot: int) -> None:
    toolkit = record.toolkits[slot]
    supported = set(_run(f"{toolkit.path}/bin/nvcc", "--list-gpu-arch").split())
    for arch in toolkit.arch_list.split(";"):
        wanted = "compute_" + arch.removesuffix("+PTX").replace(".", "")
        assert wanted in supported, f"nvcc {toolkit.version} cannot compile {arch} ({sorted(supported)})"


def test_the_default_gxx_takes_torchs_cxx_standard(record: ImageRecord, tmp_path: Path) -> None:
    source = tmp_path / "standard.cpp"
    minimum = {"c++17": 201703, "c++20": 202002, "c++23": 202302}[record.cxx_standard]
    source.write_text(f"static_assert(__cplusplus >= {minimum}L);\nint main() {{ return 0; }}\n")
    _run("g++", f"-std={record.cxx_standard}", "-o", str(tmp_path / "standard"), str(source))


def test_each_toolkit_has_a_host_compiler_it_accepts(record: ImageRecord) -> None:
    for toolkit in record.toolkits:
        assert shutil.which(toolkit.host_compiler), toolkit.host_compiler
        assert gcc_major(toolkit.host_compiler) <= toolkit.max_gcc, toolkit
        if toolkit.host_compiler == "g++":
            assert gcc_major() <= toolkit.max_gcc


def test_build_tools_present() -> None:
    for tool in ("g++", "make", "ninja", "cmake", "git"):
        assert shutil.which(tool), tool
