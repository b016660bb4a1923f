"""verify's decisions on recorded facts: old drivers, no GPU, mismatched toolkits."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pudev.common.cuda_drivers import COMPAT_FLOOR, MINIMUM_DRIVER
from pudev.config.loader import load_matrix
from pudev.image.compilers.compile_status import CompileFacts, extension_build_root
from pudev.image.drivers import judge_driver
from pudev.image.record import ImageRecord, ToolkitRecord
from pudev.image.verify import Check, arch_covered, evaluate, exit_code, render
from pudev.image.verify_evidence import Facts
from pudev.image.verify_network import NetworkFacts, collect, rdma_version
from pudev.paths import VARIANTS_FILE

GIB = 1024**3
CLUSTER_READY = NetworkFacts(verbs_library="libibverbs.so.1.14.44.0", verbs_providers=["efa", "mlx4", "mlx5"],
                             rdma_devices=["mlx5_0", "mlx5_1"],
                             uverbs_devices=["/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1"],
                             ssh_client="OpenSSH_9.2p1")
COMPILING = CompileFacts(cache_dir="/var/cache/pudev/ccache", cache_writable=True, ccache_version="4.14.2",
                         cache_bytes=GIB, cache_max_bytes=10 * GIB, hits=9, misses=3, max_jobs="2", jobs_derived=True,
                         cpus=2, memory_free=5 * GIB, memory_source="cgroup limit", cgroup_version="v1",
                         build_root="/home/dev/.cache/torch_extensions", build_root_writable=True, build_root_exec=True)
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
    """verify judges torch's CUDA and each toolkit's: every release the matrix ships has a known floor, its own
    or, for a release newer than the table (one a torch release day brought), its major's under minor-version
    compatibility."""
    matrix = load_matrix(VARIANTS_FILE)
    releases = {v.cuda for v in matrix.variants.values()} | {t.version for v in matrix.variants.values()
                                                              for t in v.toolkits}
    unknown = {cuda for cuda in releases if cuda not in MINIMUM_DRIVER and cuda.split(".")[0] not in COMPAT_FLOOR}
    assert not unknown
    assert judge_driver("580.65.06", "13.99").level != "fail"  # a 13.x the table lacks: CUDA 13's floor


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
    assert "update the host's NVIDIA driver to 525.60.13" in checks["driver vs torch"].fix
    assert "which tag for my GPU and driver" in checks["driver vs torch"].fix


def test_a_cuda_13_image_on_an_r570_driver_says_r580_or_an_older_cuda() -> None:
    checks = _by_name(evaluate(replace(CU132, driver="570.172.08")))
    assert checks["driver vs torch"].status == "fail" and ">= 580" in checks["driver vs torch"].detail
    assert "to 580 (full support" in checks["driver vs torch"].fix and "older CUDA" in checks["driver vs torch"].fix


def test_a_volta_gpu_on_a_cuda_13_torch_is_sent_to_a_cuda_12_tag() -> None:
    facts = replace(CU132, gpu_capabilities=[("Tesla V100-SXM2-32GB", "7.0")],
                    torch_arch_list=["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"])
    check = _by_name(evaluate(facts))["gpu arch"]
    assert check.status == "fail" and "sm_70" in check.detail and "CUDA 12.x tag" in check.fix


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
    from pudev.image.verify_evidence import nvcc_release, toolkit_version

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


@pytest.mark.parametrize("value", ["abc", "0", "4.5", " 4", "-2"])
def test_a_max_jobs_torch_ignores_is_a_warning_with_the_fix(value: str) -> None:
    """torch's cpp_extension reads MAX_JOBS only when it is all digits; anything else is dropped in silence."""
    checks = _by_name(evaluate(replace(HEALTHY, compile=replace(COMPILING, max_jobs=value, jobs_derived=False))))
    found = checks["compile jobs"]
    assert found.status == "warn" and f"MAX_JOBS={value!r}" in found.detail and "torch ignores it" in found.detail
    assert "unset MAX_JOBS" in found.fix


@pytest.mark.parametrize(("writable", "exec_ok", "says"), [
    (True, True, None), (False, True, "is not writable by uid"), (True, False, "is on a noexec mount")])
@pytest.mark.parametrize("max_jobs", ["2", "abc"])  # reported whatever MAX_JOBS says
def test_where_torch_builds_extensions_is_checked_with_the_mount_to_add(writable: bool, exec_ok: bool,
                                                                        says: str | None, max_jobs: str) -> None:
    """A read-only root leaves torch nowhere to build; a noexec mount lets it build a .so that cannot load."""
    compile = replace(COMPILING, build_root_writable=writable, build_root_exec=exec_ok, max_jobs=max_jobs,
                      jobs_derived=max_jobs == "2")
    found = _by_name(evaluate(replace(HEALTHY, compile=compile)))["extension builds"]
    assert COMPILING.build_root in found.detail
    if says is None:
        assert found.status == "ok"
    else:
        assert found.status == "warn" and says in found.detail
        assert f"--tmpfs {COMPILING.build_root}:exec" in found.fix and "TORCH_EXTENSIONS_DIR" in found.fix


def test_torch_builds_extensions_where_torch_itself_says() -> None:
    assert extension_build_root({"HOME": "/home/dev"}) == "/home/dev/.cache/torch_extensions"
    assert extension_build_root({"HOME": "/home/dev", "XDG_CACHE_HOME": "/c"}) == "/c/torch_extensions"
    assert extension_build_root({"HOME": "/h", "XDG_CACHE_HOME": "/c", "TORCH_EXTENSIONS_DIR": "/x"}) == "/x"


# arm64 hosts and Blackwell: /proc/cpuinfo as each machine prints it (one block per CPU, two shown).
def _arm_cpuinfo(*parts: str, implementer: str = "0x41") -> str:
    return "\n\n".join(f"processor\t: {index}\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve2\n"
                       f"CPU implementer\t: {implementer}\nCPU architecture: 8\nCPU variant\t: 0x0\n"
                       f"CPU part\t: {part}\nCPU revision\t: 0\n" for index, part in enumerate(parts))


GRACE_CPUINFO = _arm_cpuinfo("0xd4f", "0xd4f")
GB10_CPUINFO = _arm_cpuinfo("0xd85", "0xd87", "0xd85")
X86_CPUINFO = ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\n"
               "processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n")
CU126_TORCH = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
CU132_TORCH = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
TOOLKITS = [("12.6", "5.0", "9.0"), ("13.2", "7.5", "12.1")]  # docker/variants.toml's catalogue
CU132 = replace(HEALTHY, expected_cuda="13.2", torch_version="2.14.1+cu132", torch_cuda="13.2", driver="595.58.03",
                cuda_home="/usr/local/cuda-13.2", toolkit_version="13.2", toolkit_max_gcc=15,
                toolkit_arches=TOOLKITS, torch_arch_list=CU132_TORCH)
CU126 = replace(CU132, expected_cuda="12.6", torch_version="2.14.1+cu126", torch_cuda="12.6",
                cuda_home="/usr/local/cuda-12.6", toolkit_version="12.6", toolkit_max_gcc=13,
                torch_arch_list=CU126_TORCH)


def _host(facts: Facts, machine: str, cpuinfo: str, *gpus: tuple[str, str]) -> Facts:
    from pudev.image.verify_evidence import cpu_name

    return replace(facts, machine=machine, cpu=cpu_name(machine, cpuinfo), gpu_capabilities=list(gpus),
                   gpu_memory=[(name, 90 * GIB, 96 * GIB) for name, _ in gpus], device_count=len(gpus))


@pytest.mark.parametrize(("machine", "cpuinfo", "name"), [
    ("aarch64", GRACE_CPUINFO, "NVIDIA Grace (Neoverse V2)"),  # GH200, GB200, GB300
    ("aarch64", GB10_CPUINFO, "DGX Spark GB10 (Cortex-X925 + A725)"),  # big and little cores, one name
    ("aarch64", _arm_cpuinfo("0xd83"), "CPU implementer 0x41 part 0xd83"),  # Thor's Neoverse V3AE: the ids, raw
    ("aarch64", _arm_cpuinfo("0xd4f", "0xd0c"), "CPU implementer 0x41 part 0xd0c, CPU implementer 0x41 part 0xd4f"),
    ("aarch64", _arm_cpuinfo("0x000", implementer="0xc0") + "model name\t: Ampere-1a\n", "Ampere-1a"),
    ("aarch64", "Architecture: aarch64\nModel name: Neoverse-N1\n", "Neoverse-N1"),  # lscpu's layout
    ("x86_64", X86_CPUINFO, "Intel(R) Xeon(R) Platinum 8480+"),
    ("x86_64", "", ""),
])
def test_cpu_name(machine: str, cpuinfo: str, name: str) -> None:
    from pudev.image.verify_evidence import cpu_name

    assert cpu_name(machine, cpuinfo) == name


@pytest.mark.parametrize(("capability", "arch_list", "covered"), [
    ("12.1", ["sm_120"], True),  # GB10 runs sm_120 SASS
    ("10.3", ["sm_100"], True),  # B300 runs sm_100 SASS
    ("10.3", ["sm_100a"], False),  # an arch-specific target runs on its own capability only
    ("9.0", ["sm_90a"], True),
    ("10.3", ["sm_100f"], True),  # a family target runs on the family's later minors
    ("12.0", ["sm_121"], False),  # never on an earlier minor
    ("11.0", ["sm_100", "sm_120"], False),  # Thor is a major of its own
    ("11.0", ["sm_90", "compute_100"], True),
    ("12.1", ["compute_120a"], False),
    ("12.1", ["compute_120f"], True),
    ("13.0", ["compute_120f"], False),
    ("9.0", ["sm_", "compute_XX", "gfx90a", "sm_9"], False),  # what is no target is skipped
])
def test_arch_coverage_through_compatible_targets(capability: str, arch_list: list[str], covered: bool) -> None:
    assert arch_covered(capability, arch_list) is covered


def test_coverage_prefers_exact_then_compatible_sass_then_the_newest_ptx() -> None:
    from pudev.common.gpu_arch import Coverage, coverage

    assert coverage("10.3", ["sm_100", "sm_103", "compute_103"]) == Coverage("sm_103", "exact", "10.3")
    assert coverage("10.0", ["sm_100a"]) == Coverage("sm_100a", "exact", "10.0")
    assert coverage("12.1", ["sm_90", "sm_120", "compute_120"]) == Coverage("sm_120", "compatible", "12.0")
    assert coverage("8.9", ["sm_80", "sm_86", "compute_90"]) == Coverage("sm_86", "compatible", "8.6")
    assert coverage("12.0", ["sm_90", "compute_80", "compute_90"]) == Coverage("compute_90", "ptx", "9.0")
    assert coverage("12.0", ["sm_90"]) is None


@pytest.mark.parametrize(("capability", "name"), [
    ("7.0", "Volta"), ("7.5", "Turing"), ("8.0", "Ampere"), ("8.9", "Ada Lovelace"), ("9.0", "Hopper"),
    ("10.0", "Blackwell"), ("10.3", "Blackwell"), ("11.0", "Blackwell"), ("12.1", "Blackwell"), ("15.0", "unknown"),
])
def test_architecture_names(capability: str, name: str) -> None:
    from pudev.common.gpu_arch import arch_name

    assert arch_name(capability) == name


def test_gh200_names_grace_hopper_and_both_toolkits() -> None:
    checks = evaluate(_host(CU126, "aarch64", GRACE_CPUINFO, ("NVIDIA GH200 480GB", "9.0")))
    found = _by_name(checks)
    assert found["cpu"].detail == "aarch64: NVIDIA Grace (Neoverse V2)"
    assert found["gpu arch"].detail == ("NVIDIA GH200 480GB is sm_90 (Hopper, compute capability 9.0): "
                                        "torch has sm_90 kernels")
    assert found["toolkit vs gpu"].detail == "nvcc 12.6 (CUDA_HOME) compiles for sm_90; so does 13.2"
    assert all(check.status == "ok" for check in checks), render(checks)


def test_gb200_names_the_only_toolkit_that_compiles_for_it() -> None:
    checks = evaluate(_host(CU132, "aarch64", GRACE_CPUINFO, *[("NVIDIA GB200", "10.0")] * 4))
    assert [check.name for check in checks].count("gpu arch") == 1  # four of the same GPU are one line
    found = _by_name(checks)
    assert found["gpu arch"].status == "ok"
    assert "sm_100 (Blackwell, compute capability 10.0)" in found["gpu arch"].detail
    assert found["toolkit vs gpu"].detail == ("nvcc 13.2 (CUDA_HOME) compiles for sm_100, "
                                              "the only toolkit here that does")


def test_gb10_runs_torchs_sm_120_kernels() -> None:
    found = _by_name(evaluate(_host(CU132, "aarch64", GB10_CPUINFO, ("NVIDIA GB10", "12.1"))))
    assert found["cpu"].detail == "aarch64: DGX Spark GB10 (Cortex-X925 + A725)"
    assert found["gpu arch"].status == "ok"
    assert found["gpu arch"].detail.endswith(": sm_121 runs torch's sm_120 kernels "
                                             "(binary-compatible within Blackwell 12.x)")
    assert "torch has" not in found["gpu arch"].detail  # no claim of sm_121 kernels of its own


def test_b300_runs_torchs_sm_100_kernels_and_a_suffixed_ones_do_not_count() -> None:
    facts = _host(CU132, "x86_64", X86_CPUINFO, ("NVIDIA B300 SXM6 AC", "10.3"))
    arch = _by_name(evaluate(facts))["gpu arch"]
    assert arch.status == "ok" and "sm_103 runs torch's sm_100 kernels (binary-compatible within Blackwell 10.x)" \
        in arch.detail
    only_specific = _by_name(evaluate(replace(facts, torch_arch_list=["sm_90", "sm_100a"])))["gpu arch"]
    assert only_specific.status == "fail" and "sm_103 (Blackwell" in only_specific.detail
    assert "lists sm_103 (or an sm_10x below it)" in only_specific.fix and "CUDA 12.8 or newer" in only_specific.fix


def test_compatible_sass_across_names_says_capability() -> None:
    arch = _by_name(evaluate(_host(CU126, "x86_64", X86_CPUINFO, ("NVIDIA L40S", "8.9"))))["gpu arch"]
    assert arch.detail == ("NVIDIA L40S is sm_89 (Ada Lovelace, compute capability 8.9): sm_89 runs torch's sm_86 "
                           "kernels (binary-compatible within compute capability 8.x)")


def test_x86_h100_host() -> None:
    checks = evaluate(_host(CU126, "x86_64", X86_CPUINFO, ("NVIDIA H100 80GB HBM3", "9.0")))
    assert _by_name(checks)["cpu"].detail == "x86_64: Intel(R) Xeon(R) Platinum 8480+"
    assert _by_name(checks)["gpu arch"].detail.endswith("torch has sm_90 kernels")
    assert exit_code(checks) == 0 and all(check.status == "ok" for check in checks), render(checks)


def test_ptx_only_coverage_is_a_warning() -> None:
    facts = _host(CU126, "x86_64", X86_CPUINFO, ("NVIDIA RTX PRO 6000", "12.0"))
    arch = _by_name(evaluate(replace(facts, torch_arch_list=[*CU126_TORCH, "compute_90"])))["gpu arch"]
    assert arch.status == "warn" and "JIT-compiles torch's compute_90 PTX" in arch.detail and "sm_120" in arch.fix


def test_cuda_home_that_cannot_compile_for_the_gpu_says_which_toolkit_can() -> None:
    gb10 = _by_name(evaluate(replace(_host(CU132, "aarch64", GB10_CPUINFO, ("NVIDIA GB10", "12.1")),
                                     toolkit_version="12.6", cuda_home="/usr/local/cuda-12.6")))["toolkit vs gpu"]
    assert gb10.status == "warn"
    assert gb10.detail.startswith("nvcc 12.6 (CUDA_HOME, 5.0 to 9.0) cannot compile for sm_121; only 13.2 can")
    assert gb10.fix == "`cuda-switch 13.2` before building extensions"
    # A cu126 image on a B200: 13.2 compiles for it, but torch's CUDA 12.6 refuses a 13.x toolkit.
    b200 = _by_name(evaluate(_host(CU126, "x86_64", X86_CPUINFO, ("NVIDIA B200", "10.0"))))
    assert b200["gpu arch"].status == "fail" and b200["toolkit vs gpu"].status == "warn"
    assert "cuda-switch 13.2" in b200["toolkit vs gpu"].fix and "built for CUDA 13.x" in b200["toolkit vs gpu"].fix
    gone = _by_name(evaluate(replace(_host(CU132, "x86_64", X86_CPUINFO, ("NVIDIA B200", "10.0")),
                                     toolkit_version=None, cuda_home="")))["toolkit vs gpu"]
    assert gone.status == "warn" and "holds no nvcc" in gone.detail and "cuda-switch 13.2" in gone.fix


def test_nothing_covers_the_gpu() -> None:
    """A cu121 image on a GB200: torch has no Blackwell code and neither toolkit compiles for it."""
    cu121 = replace(HEALTHY, torch_arch_list=["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
                    toolkit_arches=[("11.8", "3.5", "9.0"), ("12.1", "5.0", "9.0")])
    checks = evaluate(_host(cu121, "aarch64", GRACE_CPUINFO, ("NVIDIA GB200", "10.0")))
    found = _by_name(checks)
    assert found["gpu arch"].status == "fail" and "no kernel image is available" in found["gpu arch"].detail
    assert found["toolkit vs gpu"].status == "warn"
    assert found["toolkit vs gpu"].detail == "no toolkit in this image compiles for sm_100 (11.8: 3.5 to 9.0, " \
                                             "12.1: 5.0 to 9.0)"
    assert exit_code(checks) == 1


def test_without_gpus_or_recorded_ranges_there_is_nothing_to_judge() -> None:
    names = [check.name for check in evaluate(replace(CU132, gpu_capabilities=[]))]
    assert "toolkit vs gpu" not in names and "gpu arch" not in names and "cpu" not in names
    old_record = _host(replace(CU132, toolkit_arches=[]), "x86_64", X86_CPUINFO, ("NVIDIA H100", "9.0"))
    assert "toolkit vs gpu" not in [check.name for check in evaluate(old_record)]


def test_toolkit_arches_from_the_raw_record(tmp_path: Path) -> None:
    from pudev.image.verify_evidence import toolkit_arches

    def toolkit(version: str, installed: bool) -> ToolkitRecord:
        path = tmp_path / f"cuda-{version}"
        if installed:
            (path / "bin").mkdir(parents=True)
            (path / "bin" / "nvcc").write_text("")
        return ToolkitRecord(version, str(path), 13, "g++", "9.0")

    record = replace(_record(), toolkits=[toolkit("12.6", True), toolkit("13.2", True),
                                                   toolkit("12.1", False)])
    raw = {"toolkits": [{"version": "12.6", "min_arch": "5.0", "max_arch": "9.0"},
                        {"version": "13.2"},  # a record written before the arch range was kept
                        {"version": "12.1", "min_arch": "5.0", "max_arch": "9.0"}]}
    assert toolkit_arches(record, raw) == [("12.6", "5.0", "9.0")]  # 12.1 was removed from the disk


def _record() -> ImageRecord:
    return ImageRecord(variant="cu126", image="i", torch="2.14.1", cuda="12.6", python="3.12", default_toolkit="12.6",
                       cuda_arch_list="9.0", cxx_standard="c++20", mirror="none", build_mirror="none", user="dev",
                       toolkits=[])


def test_mirror_rows_name_the_mirror_torchs_wheels_and_the_model_endpoint() -> None:
    facts = replace(HEALTHY, mirrors={"apt": "aliyun", "pip": "aliyun", "uv": "aliyun", "conda": "aliyun"},
                    torch_wheels="https://mirrors.aliyun.com/pytorch-wheels/cu121/")
    checks = _by_name(evaluate(facts))
    assert checks["package mirror"].detail.startswith("apt: aliyun  pip: aliyun")
    assert "pip install -f https://mirrors.aliyun.com/pytorch-wheels/cu121/" in checks["package mirror"].detail
    models = checks["model downloads"].detail
    assert "huggingface.co" in models and "pudev mirror --hf hf-mirror" in models and "TORCH_HOME" in models
    chosen = _by_name(evaluate(replace(facts, hf_endpoint="https://hf-mirror.com")))["model downloads"].detail
    assert chosen.startswith("Hugging Face: https://hf-mirror.com (hf-mirror)")
    custom = _by_name(evaluate(replace(facts, hf_endpoint="https://hub.example.org")))["model downloads"].detail
    assert "(custom)" in custom
