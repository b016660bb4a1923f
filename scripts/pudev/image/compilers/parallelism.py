"""How many compile jobs fit this container: MAX_JOBS (read by torch's cpp_extension, which passes
it to ninja) and CMAKE_BUILD_PARALLEL_LEVEL, derived from the CPUs and the memory the container's
cgroup allows, when the user has not set them. Without it ninja runs CPUs + 2 jobs whatever the
memory limit, and a `docker run --memory` build is killed by the OOM killer.

The per-job figure is measured (PUDEV_COMPILE_LOG, docs/using/extensions.md), on torch-harmonics 0.8.1
for sm_80: one g++ translation unit with torch's headers peaked at 1.38-1.57 GiB on the torch 2.4.1
stand-in and 1.63-1.87 GiB on 2.15.0, one nvcc device compilation at 2.41-2.88 GiB with nvcc 12.4
and 2.74-3.33 GiB with nvcc 13.2. ninja mixes both kinds, so a job is budgeted at the larger, with
headroom; the front end (pip, setup.py with torch imported) keeps its own share.

nvcc's own `--threads N` (N device compilations at once inside one job: one per -gencode target,
which packages hard-code) multiplies that: jobs x N device compilations run at once. Only memory
limits it (launcher.py): a package's N stays while jobs x N fit, else drops to what fits (at least
1). CPUs are no reason to lower it: a package's largest .cu often compiles last and alone, and its
targets one after another on one CPU left the others idle (2 CPUs, MAX_JOBS=2, `--threads 4` cut to
1: 2,567 s cold against 1,709 s with the package's own threads; issue 26).

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
# The device compilations the memory held when MAX_JOBS was derived (empty: memory unknown), for the
# launcher's nvcc threads: read again mid-build, the memory the other jobs' compiles hold would count
# against this one twice. Slots, not bytes: the environment stays the same from one start to the next.
DERIVED_SLOTS = "PUDEV_DERIVED_DEVICE_SLOTS"
OPT_OUT = "PUDEV_NO_DERIVED_JOBS"  # set: neither MAX_JOBS nor nvcc's threads are touched (ninja's default)


class Budget:
    """What a build may use here, and where each figure came from (for `pudev verify`)."""

    def __init__(self, cpus: int, memory: int | None, memory_source: str, cgroup_version: str) -> None:
        self.cpus = cpus
        self.memory = memory  # bytes free for compiling; None: unknown
        self.memory_source = memory_source
        self.cgroup_version = cgroup_version

    @property
    def device_slots(self) -> int | None:
        """Device compilations the memory holds at once beside the front end (None: memory unknown)."""
        if self.memory is None:
            return None
        return max(1, (self.memory - FRONT_END_BYTES) // DEVICE_COMPILE_BYTES)

    @property
    def max_jobs(self) -> int:
        # One job per CPU, not ninja's CPUs + 2: the two extra jobs buy little when each compile is CPU-bound
        # for tens of seconds (torch's headers), and under a memory budget each costs device-compilation
        # room that a package's nvcc --threads then loses. 2 CPUs, 22 GiB: 6 slots hold 2 jobs x 3 threads,
        # but 4 jobs x 1 thread, which leaves the last .cu's targets one after another on one CPU again.
        by_memory = self.cpus if self.memory is None else (self.memory - FRONT_END_BYTES) // JOB_BYTES
        return max(1, min(self.cpus, by_memory))

    def nvcc_threads(self, jobs: int, asked: int, targets: int = 0) -> int:
        """nvcc's --threads for a package that asked for `asked` (0: one per CPU), with `jobs` jobs side by
        side and `targets` device compilations in this nvcc call (0: not known): the package's own count
        while jobs x count device compilations fit the memory, else what fits, at least 1."""
        wanted = self.cpus if asked == 0 else asked  # nvcc's 0 counts the host's CPUs, not the CPU quota
        slots = self.device_slots
        if slots is None or jobs * wanted <= slots:
            return wanted
        fits = max(1, slots // max(1, jobs))
        if targets <= fits:
            return fits
        # The fewest threads for the same rounds: 4 targets with room for 3 run as 2 + 2, not 3 then 1
        # alone (a last round of one leaves the other CPUs idle), in less memory.
        return math.ceil(targets / math.ceil(targets / fits))


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


def build_budget(env: Mapping[str, str]) -> Budget:
    """The budget this build's MAX_JOBS was derived from (recorded beside it), else the container's now."""
    found = budget(env)
    recorded = env.get(DERIVED_SLOTS)
    if recorded is not None and (recorded.isdigit() or not recorded):
        # The memory that holds exactly the recorded slots.
        found.memory = FRONT_END_BYTES + int(recorded) * DEVICE_COMPILE_BYTES if recorded else None
    return found


def apply(env: MutableMapping[str, str]) -> None:
    """Set MAX_JOBS (and CMake's level) from this container's budget unless the user chose them."""
    if not derived_by_us(env) or env.get(OPT_OUT):
        return
    found = budget(env)
    jobs = str(found.max_jobs)
    env["MAX_JOBS"] = env[DERIVED_MARK] = jobs
    env[DERIVED_SLOTS] = "" if found.device_slots is None else str(found.device_slots)
    if env.get("CMAKE_BUILD_PARALLEL_LEVEL", jobs) == env.get("PUDEV_DERIVED_CMAKE_LEVEL", jobs):
        env["CMAKE_BUILD_PARALLEL_LEVEL"] = env["PUDEV_DERIVED_CMAKE_LEVEL"] = jobs
