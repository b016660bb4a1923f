"""How many compile jobs fit this container: MAX_JOBS (read by torch's cpp_extension, which passes
it to ninja) and CMAKE_BUILD_PARALLEL_LEVEL, derived from the CPUs and the memory the container's
cgroup allows, when the user has not set them. Without it ninja runs CPUs + 2 jobs whatever the
memory limit, and a `docker run --memory` build is killed by the OOM killer.

The per-job figures are measured (README "Extensions"): one g++ of a translation unit that
includes torch/extension.h peaked at 1.32 GiB (torch 2.4.1) and 1.40 GiB (torch 2.15.0); one
nvcc device compilation of a real extension's kernels peaks higher, so nvcc's own `--threads`
(device compilations at once inside one job) is capped by the same budget (launcher.py).

Every Python start-up applies it (pudev.image.startup), so pip, setup.py and torch's JIT load()
all see it without the entrypoint. Standard library only.
"""

from __future__ import annotations

import math

from pudev.image.compilers import cgroup

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping

GIB = 1024**3
HOST_JOB_BYTES = int(1.5 * GIB)  # one g++ job with torch's headers: 1.32-1.40 GiB measured, rounded up
DEVICE_COMPILE_BYTES = int(1.5 * GIB)  # one nvcc device compilation (one arch) of a heavy kernel
# Set beside MAX_JOBS when pudev derived it: a MAX_JOBS equal to it is ours (derived again in each
# process, the container's memory in use changes), anything else is the user's and is left alone.
DERIVED_MARK = "PUDEV_DERIVED_MAX_JOBS"


class Budget:
    """What a build may use here, and where each figure came from (for `pudev verify`)."""

    def __init__(self, cpus: int, memory: int | None, memory_source: str, cgroup_version: str) -> None:
        self.cpus = cpus
        self.memory = memory  # bytes free for compiling; None: unknown
        self.memory_source = memory_source
        self.cgroup_version = cgroup_version

    @property
    def max_jobs(self) -> int:
        by_memory = self.cpus if self.memory is None else self.memory // HOST_JOB_BYTES
        return max(1, min(self.cpus, by_memory))

    def nvcc_threads(self, jobs: int) -> int:
        """Device compilations one nvcc job may run at once, with `jobs` jobs side by side."""
        by_cpu = max(1, self.cpus // max(1, jobs))
        if self.memory is None:
            return by_cpu
        return max(1, min(by_cpu, self.memory // max(1, jobs) // DEVICE_COMPILE_BYTES))


def budget(env: Mapping[str, str] | None = None) -> Budget:
    base = cgroup.root(env)
    quota = cgroup.cpu_quota(base)
    cpus = cgroup.usable_cpus()
    if quota is not None:
        cpus = max(1, min(cpus, math.ceil(quota)))
    limit = cgroup.memory_limit(base)
    host = cgroup.host_memory_available()
    memory: int | None = host
    source = "host MemAvailable" if host is not None else "unknown"
    if limit is not None:
        free = max(0, limit - cgroup.memory_in_use(base))
        memory, source = (free if host is None else min(free, host)), "cgroup limit"
    return Budget(cpus, memory, source, cgroup.version(base))


def derived_by_us(env: Mapping[str, str]) -> bool:
    """Whether MAX_JOBS is unset or one pudev derived (not the user's own)."""
    return "MAX_JOBS" not in env or env.get("MAX_JOBS") == env.get(DERIVED_MARK)


def apply(env: MutableMapping[str, str]) -> None:
    """Set MAX_JOBS (and CMake's level) from this container's budget unless the user chose them."""
    if not derived_by_us(env) or env.get("PUDEV_NO_DERIVED_JOBS"):
        return
    jobs = str(budget(env).max_jobs)
    env["MAX_JOBS"] = env[DERIVED_MARK] = jobs
    if env.get("CMAKE_BUILD_PARALLEL_LEVEL", jobs) == env.get("PUDEV_DERIVED_CMAKE_LEVEL", jobs):
        env["CMAKE_BUILD_PARALLEL_LEVEL"] = env["PUDEV_DERIVED_CMAKE_LEVEL"] = jobs
