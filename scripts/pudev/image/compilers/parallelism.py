"""How many compile jobs fit this container: MAX_JOBS (read by torch's cpp_extension, which passes
it to ninja) and CMAKE_BUILD_PARALLEL_LEVEL, derived from the CPUs and the memory the container's
cgroup allows, when the user has not set them. Without it ninja runs CPUs + 2 jobs whatever the
memory limit, and a `docker run --memory` build is killed by the OOM killer.

The per-job figure is measured (PUDEV_COMPILE_LOG, docs/using/extensions.md), on torch-harmonics 0.8.1
for sm_80: one g++ translation unit with torch's headers peaked at 1.38-1.57 GiB on the torch 2.4.1
stand-in and 1.63-1.87 GiB on 2.15.0, one nvcc device compilation at 2.41-2.88 GiB with nvcc 12.4
and 2.74-3.33 GiB with nvcc 13.2. ninja mixes both kinds, so a job is budgeted at the larger, with
headroom; the front end (pip, setup.py with torch imported) keeps its own share. nvcc's own
`--threads` (device compilations at once inside one job, which packages hard-code) is capped by
the same budget (launcher.py).

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
DEVICE_COMPILE_BYTES = int(3.5 * GIB)  # one nvcc device compilation: 3.33 GiB measured at most (nvcc 13.2)
JOB_BYTES = DEVICE_COMPILE_BYTES  # g++ jobs measured 1.87 GiB at most: the nvcc figure covers both
# pip and setup.py with torch imported: 0.45 GiB measured on torch 2.4.1, 0.57 on 2.15.0; one job and
# the front end together (4.0 GiB) still hold the largest pair measured, 3.33 + 0.57 GiB.
FRONT_END_BYTES = GIB // 2
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
        by_memory = self.cpus if self.memory is None else (self.memory - FRONT_END_BYTES) // JOB_BYTES
        return max(1, min(self.cpus, by_memory))

    def nvcc_threads(self, jobs: int) -> int:
        """Device compilations one nvcc job may run at once, with `jobs` jobs side by side."""
        by_cpu = max(1, self.cpus // max(1, jobs))
        if self.memory is None:
            return by_cpu
        return max(1, min(by_cpu, (self.memory - FRONT_END_BYTES) // max(1, jobs) // DEVICE_COMPILE_BYTES))


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
