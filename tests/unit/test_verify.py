"""verify's decisions on recorded facts: old drivers, no GPU, mismatched toolkits."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pudev.config.loader import load_matrix
from pudev.image.drivers import MINIMUM_DRIVER, judge_driver
from pudev.image.verify import Check, arch_covered, evaluate, exit_code, render
from pudev.image.verify_facts import Facts
from pudev.paths import VARIANTS_FILE

GIB = 1024**3
HEALTHY = Facts(
    expected_cuda="12.1", torch_version="2.5.1+cu121", torch_cuda="12.1", cuda_available=True, device_count=1,
    driver="550.54.15", gpu_memory=[("NVIDIA H100", 70 * GIB, 80 * GIB)], cudnn_version=90100, cudnn_usable=True,
    nccl_version="2.21.5", cuda_home="/usr/local/cuda-12.1", toolkit_version="12.1", host_compiler="g++",
    host_compiler_major=11, toolkit_max_gcc=12, shm_bytes=8 * GIB, pinned_ok=True,
)


def _by_name(checks: list[Check]) -> dict[str, Check]:
    return {check.name: check for check in checks}


def test_healthy_machine_passes() -> None:
    checks = evaluate(HEALTHY)
    assert exit_code(checks) == 0
    assert all(check.status == "ok" for check in checks), render(checks)


def test_no_gpu_names_the_usual_cause() -> None:
    facts = replace(HEALTHY, cuda_available=False, device_count=0, driver=None, gpu_memory=[], cudnn_usable=None,
                    pinned_ok=None, nvml_error="NVML Shared Library Not Found")
    checks = _by_name(evaluate(facts))
    assert checks["gpu visible"].status == "fail"
    assert "--gpus all" in checks["gpu visible"].fix and "NVIDIA Container Toolkit" in checks["gpu visible"].fix
    assert "NVML Shared Library Not Found" in checks["gpu visible"].detail
    assert exit_code(list(checks.values())) == 1
    cpu = evaluate(facts, cpu_only=True)
    assert _by_name(cpu)["gpu visible"].status == "skip" and exit_code(cpu) == 0


@pytest.mark.parametrize(("driver", "cuda", "level"), [
    ("520.61.05", "11.8", "ok"), ("470.82.01", "11.8", "warn"), ("440.33.01", "11.8", "fail"),
    ("530.30.02", "12.1", "ok"), ("525.85.12", "12.1", "warn"), ("520.61.05", "12.1", "fail"),
    ("535.104.05", "12.4", "warn"), ("550.54.14", "12.4", "ok"),
    ("560.35.05", "12.6", "ok"), ("535.104.05", "12.6", "warn"), ("520.61.05", "12.6", "fail"),
    ("580.159.03", "13.0", "ok"), ("580.30", "13.0", "warn"), ("575.57.08", "13.0", "fail"),
    ("595.58.03", "13.2", "ok"), ("580.159.03", "13.2", "warn"), ("570.86.10", "13.2", "fail"),
])
def test_driver_minimums(driver: str, cuda: str, level: str) -> None:
    assert judge_driver(driver, cuda).level == level


def test_unknown_cuda_major_is_not_blamed_on_the_driver() -> None:
    verdict = judge_driver("600.10", "14.0")
    assert verdict.level == "warn" and "no known minimum driver for CUDA 14.0" in verdict.message


def test_every_cuda_in_the_matrix_has_a_driver_minimum() -> None:
    """verify judges torch's CUDA and each toolkit's: the table must know every release the matrix ships."""
    matrix = load_matrix(VARIANTS_FILE)
    releases = {v.cuda for v in matrix.variants.values()} | {t.version for v in matrix.variants.values()
                                                              for t in v.toolkits}
    assert releases <= set(MINIMUM_DRIVER), releases - set(MINIMUM_DRIVER)


@pytest.mark.parametrize(("capability", "arch_list", "covered"), [
    ("8.6", ["sm_80", "sm_90"], True),  # sm_80 code runs on 8.6 (same major, lower minor)
    ("12.0", ["sm_50", "sm_80", "sm_90", "compute_90"], True),  # PTX for 9.0 JIT-compiles on Blackwell
    ("12.0", ["sm_50", "sm_80", "sm_90"], False),  # a CUDA 12.1 build on an RTX 50xx
    ("7.5", ["sm_80", "sm_90", "compute_90"], False),  # PTX only runs on equal or newer GPUs
    ("10.0", ["sm_100a", "sm_120"], True),
])
def test_arch_coverage(capability: str, arch_list: list[str], covered: bool) -> None:
    assert arch_covered(capability, arch_list) is covered


def test_a_gpu_torch_has_no_kernels_for_fails_with_the_fix() -> None:
    facts = replace(HEALTHY, gpu_capabilities=[("NVIDIA GeForce RTX 5090", "12.0")],
                    torch_arch_list=["sm_50", "sm_60", "sm_70", "sm_80", "sm_86", "sm_90"])
    check = _by_name(evaluate(facts))["gpu arch"]
    assert check.status == "fail" and "no kernel image is available" in check.detail and "sm_120" in check.fix
    fine = _by_name(evaluate(replace(facts, torch_arch_list=["sm_90", "sm_120"])))["gpu arch"]
    assert fine.status == "ok" and "sm_120" in fine.detail


def test_old_driver_fails_with_the_minimum_in_the_message() -> None:
    checks = _by_name(evaluate(replace(HEALTHY, driver="520.61.05")))
    assert checks["driver vs torch"].status == "fail"
    assert ">= 525.60.13" in checks["driver vs torch"].detail and "530.30.02" in checks["driver vs torch"].detail
    assert "update the host's NVIDIA driver" in checks["driver vs torch"].fix


def test_minor_compatibility_driver_is_a_warning() -> None:
    checks = _by_name(evaluate(replace(HEALTHY, driver="525.85.12")))
    assert checks["driver vs torch"].status == "warn" and "minor-version" in checks["driver vs torch"].detail


def test_major_toolkit_mismatch_quotes_torch() -> None:
    checks = _by_name(evaluate(replace(HEALTHY, toolkit_version="11.8", cuda_home="/usr/local/cuda-11.8",
                                       toolkit_max_gcc=11)))
    assert checks["toolkit vs torch"].status == "fail"
    assert "The detected CUDA version (11.8) mismatches the version that was used to compile PyTorch (12.1)" \
        in checks["toolkit vs torch"].detail
    assert "cuda-switch" in checks["toolkit vs torch"].fix


def test_minor_toolkit_mismatch_is_a_warning() -> None:
    checks = _by_name(evaluate(replace(HEALTHY, toolkit_version="12.4", toolkit_max_gcc=13)))
    assert checks["toolkit vs torch"].status == "warn"


def test_host_compiler_too_new_for_nvcc() -> None:
    facts = replace(HEALTHY, toolkit_version="11.8", host_compiler_major=12, toolkit_max_gcc=11, torch_cuda="11.8",
                    expected_cuda="11.8")
    check = _by_name(evaluate(facts))["host compiler"]
    assert check.status == "fail" and "-ccbin g++-11" in check.fix


def test_cpu_torch_build() -> None:
    check = _by_name(evaluate(replace(HEALTHY, torch_cuda=None)))["torch build"]
    assert check.status == "fail" and "CPU build" in check.detail and "PIP_CONSTRAINT" in check.fix


@pytest.mark.parametrize(("megabytes", "status"), [(64, "fail"), (512, "warn"), (2048, "ok")])
def test_shared_memory(megabytes: int, status: str) -> None:
    check = _by_name(evaluate(replace(HEALTHY, shm_bytes=megabytes * 1024**2)))["shared memory"]
    assert check.status == status
    if status != "ok":
        assert "--shm-size" in check.fix and "--ipc=host" in check.fix


def test_busy_gpu_and_pinned_memory_failure() -> None:
    checks = _by_name(evaluate(replace(HEALTHY, gpu_memory=[("A100", 2 * GIB, 80 * GIB)], pinned_ok=False,
                                       pinned_error="cudaErrorMemoryAllocation")))
    assert checks["gpu memory"].status == "warn" and "pudev gpumon" in checks["gpu memory"].fix
    assert checks["pinned memory"].status == "fail" and "memlock" in checks["pinned memory"].fix


def test_table_lists_each_fix_once() -> None:
    text = render(evaluate(replace(HEALTHY, shm_bytes=64 * 1024**2)))
    assert text.count("fix (shared memory):") == 1 and "FAIL" in text


def test_toolkit_version_from_version_json_or_nvcc(tmp_path: Path) -> None:
    from pudev.image.verify_facts import nvcc_release, toolkit_version

    assert nvcc_release("Cuda compilation tools, release 13.0, V13.0.48\nBuild cuda_13.0.r13.0") == "13.0"
    assert nvcc_release("bash: nvcc: command not found") is None
    with_json, with_nvcc_only, empty = tmp_path / "json", tmp_path / "nvcc", tmp_path / "empty"
    (with_json / "bin").mkdir(parents=True)
    (with_json / "bin" / "nvcc").write_text("")
    (with_json / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "11.8.89"}}')
    (with_nvcc_only / "bin").mkdir(parents=True)
    nvcc = with_nvcc_only / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    nvcc.chmod(0o755)
    empty.mkdir()
    assert toolkit_version(str(with_json)) == "11.8"
    (with_json / "bin" / "nvcc").unlink()
    assert toolkit_version(str(with_json)) is None  # version.json alone is no toolkit
    assert toolkit_version(str(with_nvcc_only)) == "12.4"
    assert toolkit_version(str(empty)) is None
    assert toolkit_version("") is None
