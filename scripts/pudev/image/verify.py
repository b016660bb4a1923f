"""`pudev verify`: the environment checklist in one command (CPU, GPU visible, its
architecture, driver, torch build, toolkit vs torch and vs the GPU, host compiler, cuDNN,
NCCL, GPU memory, /dev/shm, pinned memory, the package mirror and where models download from,
and for clusters: InfiniBand/RoCE verbs libraries and devices, ssh).
A compact table, a one-line fix for each problem, --json, and a non-zero exit when
something a user needs is broken.

Facts are gathered once (gather_facts); the decisions (evaluate) are pure so
tests/unit can feed them recorded facts."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass

from pudev.common.cuda_drivers import driver_minimum
from pudev.common.gpu_arch import arch_name, capability_of, compiling_toolkits, coverage, sm_name
from pudev.common.table import render_table
from pudev.image.compilers.compile_status import CompileFacts
from pudev.image.compilers.parallelism import JOB_BYTES
from pudev.image.cudaswitch import judge
from pudev.image.drivers import judge_driver
from pudev.image.verify_evidence import Facts
from pudev.image.verify_network import NetworkFacts, rdma_version
from pudev.mirror import models, switch

GIB = 1024**3
SHM_FAIL_BYTES = 256 * 1024**2
SHM_WARN_BYTES = 1 * GIB
SHM_FIX = "give the container more shared memory: docker run --shm-size=8g ... (or --ipc=host)"
COMMON_PROVIDERS = ("mlx5", "efa", "irdma", "bnxt_re", "mlx4", "rxe")
GPU_FIX = ("run the container with `docker run --gpus all ...` on a host with the NVIDIA driver and the "
           "NVIDIA Container Toolkit")


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok, warn, fail, skip
    detail: str
    fix: str = ""


def _gpu_checks(facts: Facts) -> list[Check]:
    if not (facts.cuda_available and facts.device_count > 0):
        reason = facts.nvml_error or "torch.cuda.is_available() is False"
        return [Check("gpu visible", "fail", f"no GPU visible to the container ({reason})", GPU_FIX)]
    checks = [Check("gpu visible", "ok", f"{facts.device_count} GPU(s): "
                                         f"{', '.join(name for name, _, _ in facts.gpu_memory) or 'unnamed'}")]
    for name, free, total in facts.gpu_memory:
        level = "warn" if total and free < total * 0.1 else "ok"
        checks.append(Check("gpu memory", level, f"{name}: {free / GIB:.1f} of {total / GIB:.1f} GiB free",
                            "another process holds the GPU: see `pudev gpumon`" if level == "warn" else ""))
    if facts.cudnn_usable is False:
        checks.append(Check("cudnn", "fail", f"cuDNN {facts.cudnn_version} could not run a convolution",
                            "the base image's cuDNN does not match the driver; use a matching pytorch base"))
    if facts.pinned_ok is False:
        checks.append(Check("pinned memory", "fail", f"pinned allocation failed: {facts.pinned_error}",
                            "raise the locked-memory limit: docker run --ulimit memlock=-1 ..."))
    elif facts.pinned_ok:
        checks.append(Check("pinned memory", "ok", "64 MiB pinned host buffer allocated"))
    return checks


def arch_covered(capability: str, arch_list: list[str]) -> bool:
    """Whether torch ships code that runs on a GPU: its own or compatible SASS, or PTX the driver can JIT."""
    return coverage(capability, arch_list) is not None


def _arch_fix(sm: str, capability: str) -> str:
    major, minor = capability_of(capability)
    lower = f" (or an sm_{major}x below it)" if minor else ""  # compatible SASS of the same major also runs
    why = ""
    if major >= 10:
        why = " (Blackwell, sm_100 to sm_121, needs torch built for CUDA 12.8 or newer: a cu13x tag)"
    elif (major, minor) < (7, 5):
        why = f" (CUDA 13 builds no code for {sm}: Volta and older need a CUDA 12.x tag, cu12x)"
    return f"use a variant whose torch lists {sm}{lower}{why}"


def _arch_check(name: str, capability: str, facts: Facts) -> Check:
    """A GPU's architecture, and what of torch's code runs on it."""
    sm, family = sm_name(capability), arch_name(capability)
    major = capability_of(capability)[0]
    gpu = f"{name} is {sm} ({family}, compute capability {capability})"
    found = coverage(capability, facts.torch_arch_list)
    if found is None:
        return Check("gpu arch", "fail", f"{gpu}, which torch {facts.torch_version} has no kernels for "
                                         f"({' '.join(facts.torch_arch_list)}): CUDA calls fail with "
                                         "'no kernel image is available for execution on the device'",
                     _arch_fix(sm, capability))
    if found.how == "exact":
        return Check("gpu arch", "ok", f"{gpu}: torch has {found.entry} kernels")
    if found.how == "compatible":
        # Ada (8.9) runs Ampere's sm_86: name the family only where both share it.
        within = family if arch_name(found.capability) == family else "compute capability"
        return Check("gpu arch", "ok", f"{gpu}: {sm} runs torch's {found.entry} kernels "
                                       f"(binary-compatible within {within} {major}.x)")
    return Check("gpu arch", "warn", f"{gpu}: torch has no kernels for it; the driver JIT-compiles torch's "
                                     f"{found.entry} PTX (slow first use, slower kernels)", _arch_fix(sm, capability))


def _arch_checks(facts: Facts) -> list[Check]:
    """One line per GPU model (eight of the same GPU are one line)."""
    if not facts.torch_arch_list:
        return []  # torch lists its targets whenever it sees a GPU: nothing to judge without them
    return [_arch_check(name, capability, facts) for name, capability in dict.fromkeys(facts.gpu_capabilities)]


def _toolkit_gpu_checks(facts: Facts) -> list[Check]:
    """Which of the image's toolkits compile extensions for each GPU, and whether CUDA_HOME's does."""
    if not facts.toolkit_arches:
        return []  # an image record from before toolkits' arch ranges were recorded
    checks = []
    for capability in dict.fromkeys(capability for _, capability in facts.gpu_capabilities):
        sm, able = sm_name(capability), compiling_toolkits(capability, facts.toolkit_arches)
        others = [version for version in able if version != facts.toolkit_version]
        if facts.toolkit_version in able:
            also = f"; so does {', '.join(others)}" if others else \
                ", the only toolkit here that does" if len(facts.toolkit_arches) > 1 else ""
            checks.append(Check("toolkit vs gpu", "ok", f"nvcc {facts.toolkit_version} (CUDA_HOME) compiles for "
                                                        f"{sm}{also}"))
        elif able:
            checks.append(Check("toolkit vs gpu", "warn", f"{_active_nvcc(facts)} cannot compile for {sm}; only "
                                                          f"{', '.join(able)} can: extensions built now get no {sm} "
                                                          "code (at best PTX the driver JIT-compiles)",
                                _switch_fix(able, facts.torch_cuda)))
        else:
            ranges = ", ".join(f"{version}: {low} to {high}" for version, low, high in facts.toolkit_arches)
            checks.append(Check("toolkit vs gpu", "warn", f"no toolkit in this image compiles for {sm} ({ranges})",
                                f"use a variant with a toolkit whose nvcc lists {sm} (`nvcc --list-gpu-arch`)"))
    return checks


def _active_nvcc(facts: Facts) -> str:
    if facts.toolkit_version is None:
        return f"CUDA_HOME={facts.cuda_home!r} holds no nvcc, so it"
    low, high = next(((low, high) for version, low, high in facts.toolkit_arches
                      if version == facts.toolkit_version), ("?", "?"))
    return f"nvcc {facts.toolkit_version} (CUDA_HOME, {low} to {high})"


def _switch_fix(able: list[str], torch_cuda: str | None) -> str:
    """cuda-switch to a toolkit that compiles for the GPU; say so when torch's CUDA major refuses it."""
    newest = max(able, key=lambda version: tuple(int(part) for part in version.split(".")))
    fix = f"`cuda-switch {newest}` before building extensions"
    if torch_cuda and judge(newest, torch_cuda).level == "fail":
        fix += (f", though torch's CUDA {torch_cuda} refuses a CUDA {newest} toolkit: use a variant whose torch "
                f"is built for CUDA {newest.split('.')[0]}.x")
    return fix


def _cpu_checks(facts: Facts) -> list[Check]:
    """The host's CPU: arm64 machines pair NVIDIA GPUs with Grace (GH200, GB200) or GB10 (DGX Spark)."""
    if not facts.machine:
        return []
    return [Check("cpu", "ok", f"{facts.machine}: {facts.cpu or 'no model name in /proc/cpuinfo'}")]


def _driver_checks(facts: Facts) -> list[Check]:
    if facts.driver is None:
        return [Check("driver", "skip", "no NVIDIA driver visible (NVML)", GPU_FIX)]
    checks = []
    for label, cuda in (("driver vs torch", facts.torch_cuda), ("driver vs toolkit", facts.toolkit_version)):
        if not cuda:
            continue
        verdict = judge_driver(facts.driver, cuda)
        status = verdict.level
        fix = "" if status == "ok" else (f"update the host's NVIDIA driver to {driver_minimum(cuda).removeprefix('≥ ')}"
                                         " or newer, or pull a tag built for an older CUDA (the README's table: "
                                         "which tag for my GPU and driver)")
        checks.append(Check(label, status, verdict.message, fix))
    return checks


def _build_checks(facts: Facts) -> list[Check]:
    checks = []
    if facts.torch_cuda is None:
        checks.append(Check("torch build", "fail", f"torch {facts.torch_version} is a CPU build",
                            "something replaced the image's torch: keep PIP_CONSTRAINT set "
                            "(/etc/pudev/torch-constraints.txt) for every pip install"))
    elif facts.torch_cuda != facts.expected_cuda:
        checks.append(Check("torch build", "fail", f"torch is built for CUDA {facts.torch_cuda}, the image promises "
                                                   f"{facts.expected_cuda}", "use the image variant you meant to"))
    else:
        checks.append(Check("torch build", "ok", f"torch {facts.torch_version}, CUDA {facts.torch_cuda}"))
    if facts.toolkit_version is None:
        checks.append(Check("cuda toolkit", "fail", f"no toolkit at CUDA_HOME={facts.cuda_home!r}",
                            "run `cuda-switch --list` and pick an installed toolkit"))
    elif facts.torch_cuda:
        verdict = judge(facts.toolkit_version, facts.torch_cuda)
        status = verdict.level
        major = facts.torch_cuda.split(".")[0]
        fix = f"switch to a CUDA {major}.x toolkit: `cuda-switch --list`, then `cuda-switch VERSION`" \
            if status == "fail" else ""
        checks.append(Check("toolkit vs torch", status, verdict.message, fix))
    if facts.toolkit_max_gcc is not None and facts.host_compiler_major is not None:
        if facts.host_compiler_major > facts.toolkit_max_gcc:
            checks.append(Check("host compiler", "fail",
                                f"nvcc {facts.toolkit_version} refuses {facts.host_compiler} "
                                f"(gcc {facts.host_compiler_major} > {facts.toolkit_max_gcc})",
                                f"run `cuda-switch {facts.toolkit_version}` (it sets NVCC_PREPEND_FLAGS='-ccbin g++-"
                                f"{facts.toolkit_max_gcc}')"))
        else:
            checks.append(Check("host compiler", "ok", f"nvcc {facts.toolkit_version} uses {facts.host_compiler} "
                                                       f"(gcc {facts.host_compiler_major})"))
    checks.append(Check("cudnn", "ok" if facts.cudnn_version else "fail",
                        f"cuDNN {facts.cudnn_version}" if facts.cudnn_version else "torch reports no cuDNN",
                        "" if facts.cudnn_version else "use a -cudnn base image"))
    checks.append(Check("nccl", "ok" if facts.nccl_version else "warn",
                        f"NCCL {facts.nccl_version}" if facts.nccl_version else "NCCL not available",
                        "" if facts.nccl_version else "multi-GPU training with the nccl backend will not work"))
    return checks


def _network_checks(network: NetworkFacts) -> list[Check]:
    """What multi-node jobs need: NCCL uses InfiniBand/RoCE through libibverbs where the
    container can open the devices, TCP sockets otherwise; MPI-style launchers need ssh."""
    if not network.verbs_library:
        checks = [Check("rdma libraries", "warn", "libibverbs is missing: NCCL cannot use InfiniBand or RoCE",
                        "apt-get install libibverbs1 ibverbs-providers librdmacm1")]
    elif not network.verbs_providers:
        checks = [Check("rdma libraries", "warn", f"{network.verbs_library} has no hardware providers",
                        "apt-get install ibverbs-providers")]
    else:
        # The hardware clusters use most first (Mellanox/NVIDIA, AWS EFA, Intel, Broadcom), then the rest.
        ranked = sorted(network.verbs_providers,
                        key=lambda name: (COMMON_PROVIDERS.index(name) if name in COMMON_PROVIDERS else 99, name))
        shown = ", ".join(ranked[:6]) + (", ..." if len(ranked) > 6 else "")
        release = rdma_version(network.verbs_library)
        checks = [Check("rdma libraries", "ok", f"libibverbs{' (rdma-core ' + release + ')' if release else ''}, "
                                                f"{len(network.verbs_providers)} providers: {shown}")]
    if network.uverbs_devices:
        checks.append(Check("rdma devices", "ok", f"{', '.join(network.rdma_devices) or 'RDMA'} open here "
                                                  f"({len(network.uverbs_devices)} uverbs): NCCL can use them"))
    elif network.rdma_devices:
        checks.append(Check("rdma devices", "warn", f"the host has {', '.join(network.rdma_devices)} but this "
                                                    "container cannot open them: NCCL falls back to TCP sockets",
                            "pass them in: docker run --device /dev/infiniband --ulimit memlock=-1 ... "
                            "(Kubernetes: an RDMA device plugin)"))
    else:
        checks.append(Check("rdma devices", "skip", "no InfiniBand/RoCE devices: NCCL uses TCP sockets between nodes"))
    if network.ssh_client:
        checks.append(Check("ssh client", "ok", f"{network.ssh_client} (for mpirun, pdsh and other ssh launchers)"))
    else:
        checks.append(Check("ssh client", "warn", "no ssh client: MPI-style launchers cannot reach other nodes",
                            "apt-get install openssh-client"))
    return checks


CACHE_FIX = "mount a volume any user can write there: docker run -v pudev-ccache:/var/cache/pudev/ccache ..."


def _compile_checks(compile: CompileFacts) -> list[Check]:
    """The compiler cache and the compile jobs that fit this container (docs/using/extensions.md)."""
    if not compile.ccache_version:
        cache = Check("compiler cache", "warn", "ccache is missing: every extension build compiles from scratch",
                      "use an image built by pudev (it ships /usr/local/bin/ccache)")
    elif not compile.cache_writable:
        cache = Check("compiler cache", "warn", f"{compile.cache_dir} is not writable by uid {os.getuid()}: "
                                                "extensions compile uncached", CACHE_FIX)
    else:
        looked = compile.hits + compile.misses
        rate = f"hit rate {100 * compile.hits / looked:.0f}% ({compile.hits} of {looked})" if looked else \
            "no compiles yet"
        size = f"{compile.cache_bytes / GIB:.1f} of {compile.cache_max_bytes / GIB:.1f} GiB"
        cache = Check("compiler cache", "ok", f"ccache {compile.ccache_version} at {compile.cache_dir}: {size}, {rate}")
    if compile.jobs_derived:
        cgroup = f", cgroup {compile.cgroup_version}" if compile.cgroup_version else ""
        memory = "memory unknown" if compile.memory_free is None else \
            f"{compile.memory_free / GIB:.1f} GiB free ({compile.memory_source}{cgroup})"
        detail = (f"MAX_JOBS={compile.max_jobs or '?'}, derived: {compile.cpus} CPU(s), {memory}, "
                  f"{JOB_BYTES / GIB:.2f} GiB per job")
    elif not compile.max_jobs.isdigit() or int(compile.max_jobs) == 0:
        # torch's cpp_extension reads MAX_JOBS only when it is all digits: anything else is ignored silently, and
        # ninja then runs one job per CPU, whatever the memory holds.
        return [cache, Check("compile jobs", "warn", f"MAX_JOBS={compile.max_jobs!r} is not a positive whole number: "
                                                     "torch ignores it and builds with one job per CPU",
                             "unset MAX_JOBS (pudev derives it from the container's CPUs and memory) or set a "
                             "number, e.g. MAX_JOBS=4"), _build_root_check(compile)]
    else:
        detail = f"MAX_JOBS={compile.max_jobs}, set by you (pudev derives it when unset)"
    return [cache, Check("compile jobs", "ok", detail), _build_root_check(compile)]


def _build_root_check(compile: CompileFacts) -> Check:
    """A read-only root (Kubernetes' readOnlyRootFilesystem) leaves torch nowhere to build an extension, and a
    noexec mount (Docker's --tmpfs default) lets it build one that cannot load: say which, and the mount to add."""
    root = compile.build_root
    fix = (f"mount a writable folder without noexec there, e.g. docker run --tmpfs {root}:exec,uid={os.getuid()} "
           "(Kubernetes: an emptyDir volume), or set TORCH_EXTENSIONS_DIR to a folder on such a mount")
    if not compile.build_root_writable:
        return Check("extension builds", "warn", f"{root} is not writable by uid {os.getuid()}: "
                                                 "torch cannot build C++/CUDA extensions", fix)
    if not compile.build_root_exec:
        return Check("extension builds", "warn", f"{root} is on a noexec mount: an extension builds but cannot "
                                                 "load (failed to map segment from shared object)", fix)
    return Check("extension builds", "ok", f"torch builds extensions in {root}")


def _mirror_checks(facts: Facts) -> list[Check]:
    """Where packages and models come from (docs/using/mirrors.md): facts, never a verdict, since only
    the user knows which hosts their network reaches."""
    state = switch.format_state(facts.mirrors) or "unknown"
    wheels = f"; torch's CUDA wheels: pip install -f {facts.torch_wheels} PACKAGE" if facts.torch_wheels else ""
    hf = models.state(facts.hf_endpoint)
    if hf == models.NO_HF_MIRROR:
        download = ("Hugging Face: huggingface.co itself (no HF_ENDPOINT); where it is blocked, "
                    "`pudev mirror --hf hf-mirror` (a community service) or your own proxy")
    else:
        download = f"Hugging Face: {facts.hf_endpoint} ({hf})"
    return [Check("package mirror", "ok", state + wheels),
            Check("model downloads", "ok", download + "; torch.hub and torchvision weights: download.pytorch.org "
                                           "and GitHub, no mirror (keep TORCH_HOME on a volume)")]


def evaluate(facts: Facts, *, cpu_only: bool = False) -> list[Check]:
    """Every check, in the order the table shows them."""
    gpu = _gpu_checks(facts) + _arch_checks(facts) + _toolkit_gpu_checks(facts) + _driver_checks(facts)
    if cpu_only:
        gpu = [Check(c.name, "skip", f"--cpu: {c.detail}") if c.status != "ok" else c for c in gpu]
    shm_mib = facts.shm_bytes / 1024**2
    if facts.shm_bytes < SHM_FAIL_BYTES:
        shm = Check("shared memory", "fail", f"/dev/shm is {shm_mib:.0f} MiB: DataLoader workers will crash", SHM_FIX)
    elif facts.shm_bytes < SHM_WARN_BYTES:
        shm = Check("shared memory", "warn", f"/dev/shm is {shm_mib:.0f} MiB: large batches may not fit", SHM_FIX)
    else:
        shm = Check("shared memory", "ok", f"/dev/shm is {facts.shm_bytes / GIB:.1f} GiB")
    return [*_cpu_checks(facts), *gpu, *_build_checks(facts), *_compile_checks(facts.compile), shm,
            *_mirror_checks(facts), *_network_checks(facts.network)]


def exit_code(checks: list[Check]) -> int:
    return 1 if any(check.status == "fail" for check in checks) else 0


def render(checks: list[Check]) -> str:
    marks = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "skip": "skip"}
    table = render_table(["check", "status", "detail"], [[c.name, marks[c.status], c.detail] for c in checks])
    fixes = [f"  fix ({c.name}): {c.fix}" for c in checks if c.fix and c.status in ("fail", "warn")]
    return "\n".join([table, *fixes])


def gather_facts() -> Facts:
    from pudev.image.verify_evidence import collect

    return collect()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pudev verify",
                                     description="Check that this container can train on its GPUs.")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--cpu", action="store_true", help="no GPU expected: report GPU checks as skipped")
    args = parser.parse_args(argv)
    facts = gather_facts()
    checks = evaluate(facts, cpu_only=args.cpu)
    if args.json:
        print(json.dumps({"ok": exit_code(checks) == 0, "checks": [asdict(c) for c in checks],
                          "facts": asdict(facts)}, indent=2))
    else:
        print(render(checks))
    return exit_code(checks)


if __name__ == "__main__":
    sys.exit(main())
