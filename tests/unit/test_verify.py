"""verify's decisions on recorded facts: old drivers, no GPU, mismatched toolkits."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pudev.config.loader import load_matrix
from pudev.image.compilers.facts import CompileFacts
from pudev.image.drivers import MINIMUM_DRIVER, judge_driver
from pudev.image.verify import Check, arch_covered, evaluate, exit_code, render
from pudev.image.verify_facts import Facts
from pudev.image.verify_network import NetworkFacts, collect, rdma_version
from pudev.paths import VARIANTS_FILE

GIB = 1024**3
CLUSTER_READY = NetworkFacts(verbs_library="libibverbs.so.1.14.44.0", verbs_providers=["efa", "mlx4", "mlx5"],
                             rdma_devices=["mlx5_0", "mlx5_1"],
                             uverbs_devices=["/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1"],
                             ssh_client="OpenSSH_9.2p1")
COMPILING = CompileFacts(cache_dir="/var/cache/pudev/ccache", cache_writable=True, ccache_version="4.14.2",
                         cache_bytes=GIB, cache_max_bytes=10 * GIB, hits=9, misses=3, max_jobs="2", jobs_derived=True,
                         cpus=2, memory_free=5 * GIB, memory_source="cgroup limit", cgroup_version="v1")
HEALTHY = Facts(
    expected_cuda="12.1", torch_version="2.5.1+cu121", torch_cuda="12.1", cuda_available=True, device_count=1,
    driver="550.54.15", gpu_memory=[("NVIDIA H100", 70 * GIB, 80 * GIB)], cudnn_version=90100, cudnn_usable=True,
    nccl_version="2.21.5", cuda_home="/usr/local/cuda-12.1", toolkit_version="12.1", host_compiler="g++",
    host_compiler_major=11, toolkit_max_gcc=12, shm_bytes=8 * GIB, pinned_ok=True, network=CLUSTER_READY,
    compile=COMPILING,
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


def test_cluster_networking_ready() -> None:
    checks = _by_name(evaluate(HEALTHY))
    assert checks["rdma libraries"].detail == "libibverbs (rdma-core 44.0), 3 providers: mlx5, efa, mlx4"
    devices = checks["rdma devices"]
    assert devices.status == "ok" and "mlx5_0, mlx5_1 open here (2 uverbs)" in devices.detail
    assert checks["ssh client"].status == "ok" and "OpenSSH_9.2p1" in checks["ssh client"].detail


def test_no_rdma_hardware_is_not_a_problem() -> None:
    network = replace(CLUSTER_READY, rdma_devices=[], uverbs_devices=[])
    checks = evaluate(replace(HEALTHY, network=network))
    assert _by_name(checks)["rdma devices"].status == "skip"
    assert "TCP sockets" in _by_name(checks)["rdma devices"].detail and exit_code(checks) == 0


def test_host_devices_the_container_cannot_open_say_how_to_pass_them() -> None:
    checks = _by_name(evaluate(replace(HEALTHY, network=replace(CLUSTER_READY, uverbs_devices=[]))))
    check = checks["rdma devices"]
    assert check.status == "warn" and "mlx5_0, mlx5_1" in check.detail and "TCP sockets" in check.detail
    assert "--device /dev/infiniband" in check.fix and "memlock" in check.fix


def test_missing_libraries_and_ssh_are_warnings_with_the_package_to_install() -> None:
    checks = _by_name(evaluate(replace(HEALTHY, network=NetworkFacts())))
    assert checks["rdma libraries"].status == "warn" and "libibverbs1 ibverbs-providers" in checks["rdma libraries"].fix
    assert checks["ssh client"].status == "warn" and "openssh-client" in checks["ssh client"].fix
    no_providers = _by_name(evaluate(replace(HEALTHY, network=replace(CLUSTER_READY, verbs_providers=[]))))
    assert no_providers["rdma libraries"].status == "warn" and "ibverbs-providers" in no_providers["rdma libraries"].fix
    assert exit_code(list(checks.values())) == 0  # a single machine trains without them


def test_network_facts_from_a_filesystem(tmp_path: Path) -> None:
    """The layout Debian and Ubuntu install (multiarch libibverbs, providers beside it, sysfs, /dev)."""
    libdir = tmp_path / "usr/lib/x86_64-linux-gnu"
    (libdir / "libibverbs").mkdir(parents=True)
    (libdir / "libibverbs.so.1.14.44.0").write_text("")
    (libdir / "libibverbs.so.1").symlink_to("libibverbs.so.1.14.44.0")
    for provider in ("libmlx5-rdmav34.so", "libefa-rdmav34.so", "README"):
        (libdir / "libibverbs" / provider).write_text("")
    assert collect(tmp_path) == NetworkFacts(verbs_library="libibverbs.so.1.14.44.0",
                                             verbs_providers=["efa", "mlx5"])
    (tmp_path / "sys/class/infiniband/mlx5_0").mkdir(parents=True)
    (tmp_path / "dev/infiniband").mkdir(parents=True)
    (tmp_path / "dev/infiniband/uverbs0").write_text("")
    facts = collect(tmp_path)
    assert facts.rdma_devices == ["mlx5_0"] and facts.uverbs_devices == [str(tmp_path / "dev/infiniband/uverbs0")]
    assert collect(tmp_path / "empty") == NetworkFacts()
    assert rdma_version("libibverbs.so.1.14.44.0") == "44.0" and rdma_version("libibverbs.so.1") == ""


def test_the_compiler_cache_shows_where_how_full_and_its_hit_rate() -> None:
    checks = _by_name(evaluate(HEALTHY))
    assert checks["compiler cache"].detail == ("ccache 4.14.2 at /var/cache/pudev/ccache: 1.0 of 10.0 GiB, "
                                               "hit rate 75% (9 of 12)")
    assert checks["compile jobs"].detail == ("MAX_JOBS=2, derived: 2 CPU(s), 5.0 GiB free (cgroup limit, cgroup v1), "
                                             "3.50 GiB per job")


def test_an_unwritable_or_missing_cache_is_a_warning_with_the_fix() -> None:
    unwritable = _by_name(evaluate(replace(HEALTHY, compile=replace(COMPILING, cache_writable=False))))
    assert unwritable["compiler cache"].status == "warn"
    assert "not writable" in unwritable["compiler cache"].detail and "-v pudev-ccache:" in unwritable[
        "compiler cache"].fix
    missing = _by_name(evaluate(replace(HEALTHY, compile=replace(COMPILING, ccache_version=""))))
    assert missing["compiler cache"].status == "warn" and "ccache is missing" in missing["compiler cache"].detail


def test_a_users_own_max_jobs_is_reported_as_theirs() -> None:
    checks = _by_name(evaluate(replace(HEALTHY, compile=replace(COMPILING, max_jobs="16", jobs_derived=False))))
    assert checks["compile jobs"].detail == "MAX_JOBS=16, set by you (pudev derives it when unset)"
