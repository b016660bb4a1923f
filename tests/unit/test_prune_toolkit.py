"""docker/steps/prune-toolkit.sh on a toolkit tree laid out like NVIDIA's devel images. The stand-in toolkits
leave the math libraries out (docker/standins/toolkit.Dockerfile), so their removal is proven here."""

from __future__ import annotations

import subprocess
from pathlib import Path

from build_steps import STEPS

PRUNE = STEPS / "prune-toolkit.sh"

KEPT = ["bin/nvcc", "bin/ptxas", "include/cuda_runtime.h", "include/cublas_v2.h", "include/cufft.h",
        "lib64/libcudart.so.12", "lib64/libcudart_static.a", "lib64/libcudadevrt.a", "lib64/stubs/libcuda.so",
        "nvvm/libdevice/libdevice.10.bc", "extras/CUPTI/include/cupti.h"]
DROPPED = ["lib64/libcublas.so.12", "lib64/libcublasLt.so.12", "lib64/libcufft.so.11", "lib64/libcurand.so.10",
           "lib64/libcusolver.so.11", "lib64/libcusolverMg.so.11", "lib64/libcusparse.so.12",
           "lib64/libnppial.so.12", "lib64/libnvjpeg.so.12", "lib64/libnvrtc.so.12", "lib64/libnvJitLink.so.12",
           "lib64/libcublas_static.a", "lib64/libculibos.a", "extras/CUPTI/lib64/libcupti.so.12", "bin/nvdisasm",
           "doc/html/index.html", "nsight-compute-2024.1/ncu"]


def _tree(top: Path) -> None:
    for name in KEPT + DROPPED:
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_bytes(b"x")
    (top / "bin/nvcc").chmod(0o755)
    # The unversioned links the linker reads, as NVIDIA ships them.
    (top / "lib64/libcublas.so").symlink_to("libcublas.so.12")
    (top / "lib64/libcudart.so").symlink_to("libcudart.so.12")


def test_prune_keeps_what_extensions_build_against_and_drops_the_rest(tmp_path: Path) -> None:
    top = tmp_path / "cuda-12.4"
    _tree(top)
    result = subprocess.run(["sh", str(PRUNE), str(top)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert [name for name in KEPT if not (top / name).exists()] == []
    assert [name for name in DROPPED if (top / name).exists()] == []
    assert not (top / "lib64/libcublas.so").is_symlink(), "a link to a dropped library was left dangling"
    assert (top / "lib64/libcudart.so").resolve() == top / "lib64/libcudart.so.12"
    assert "prune-toolkit:" in result.stdout and "MB ->" in result.stdout


def test_prune_refuses_a_tree_without_nvcc(tmp_path: Path) -> None:
    top = tmp_path / "cuda-12.4"
    (top / "lib64").mkdir(parents=True)
    (top / "lib64/libcublas.so.12").write_bytes(b"x")
    result = subprocess.run(["sh", str(PRUNE), str(top)], capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "bin/nvcc not found" in result.stderr and "-devel image" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert (top / "lib64/libcublas.so.12").exists(), "nothing is deleted from a tree it refuses"
