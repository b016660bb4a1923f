"""What this container may really use: CPUs and memory from its cgroup (v1 or v2), not the host's,
and the cgroup's count of processes its OOM killer stopped.

Docker on older hosts mounts cgroup v1 (/sys/fs/cgroup/memory/memory.limit_in_bytes,
/sys/fs/cgroup/cpu/cpu.cfs_quota_us); current hosts use v2 (/sys/fs/cgroup/memory.max,
cpu.max). Both are read; PUDEV_CGROUP_ROOT points at another tree (tests give a made-up one).

Standard library only and a handful of small reads: every Python start-up calls it (parallelism).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # `typing` stays out of every interpreter start (see pudev.image.home)
if TYPE_CHECKING:
    from collections.abc import Mapping

DEFAULT_ROOT = "/sys/fs/cgroup"
# cgroup v1 writes a page-rounded 2**63 - 1 for "no limit"; anything this large means none.
UNLIMITED = 1 << 60


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read().strip()
    except (OSError, ValueError):
        return ""


def _number(text: str) -> int | None:
    return int(text) if text.lstrip("-").isdigit() else None


def keyed(text: str, separator: str = " ") -> dict[str, int]:
    """`key value` lines with a number for a value (memory.stat, memory.events, `ccache --print-stats`)."""
    pairs = {}
    for line in text.splitlines():
        key, _, value = line.partition(separator)
        if value.strip().isdigit():
            pairs[key] = int(value)
    return pairs


def root(env: Mapping[str, str] | None = None) -> str:
    return (env if env is not None else os.environ).get("PUDEV_CGROUP_ROOT") or DEFAULT_ROOT


def version(base: str) -> str:
    """"v2" when the unified hierarchy is mounted here, "v1" when the memory controller is, else ""."""
    if os.path.exists(os.path.join(base, "cgroup.controllers")):
        return "v2"
    if os.path.isdir(os.path.join(base, "memory")) or os.path.isdir(os.path.join(base, "cpu")):
        return "v1"
    return ""


def memory_limit(base: str) -> int | None:
    """Bytes this container may use, or None when its cgroup sets no limit."""
    if version(base) == "v2":
        value = _number(_read(os.path.join(base, "memory.max")))
    else:
        value = _number(_read(os.path.join(base, "memory", "memory.limit_in_bytes")))
    return value if value is not None and 0 < value < UNLIMITED else None


def memory_in_use(base: str) -> int:
    """Bytes the container uses now that it cannot give back (page cache left out)."""
    if version(base) == "v2":
        used = _number(_read(os.path.join(base, "memory.current"))) or 0
        cache = keyed(_read(os.path.join(base, "memory.stat"))).get("file", 0)
    else:
        used = _number(_read(os.path.join(base, "memory", "memory.usage_in_bytes"))) or 0
        cache = keyed(_read(os.path.join(base, "memory", "memory.stat"))).get("total_cache", 0)
    return max(0, used - cache)


def cpu_quota(base: str) -> float | None:
    """CPUs the cgroup's CFS quota allows (`docker run --cpus`), or None when it sets none."""
    if version(base) == "v2":
        quota_text, _, period_text = _read(os.path.join(base, "cpu.max")).partition(" ")
        quota, period = _number(quota_text), _number(period_text)
    else:
        directory = os.path.join(base, "cpu")
        if not os.path.isdir(directory):
            directory = os.path.join(base, "cpu,cpuacct")
        quota = _number(_read(os.path.join(directory, "cpu.cfs_quota_us")))
        period = _number(_read(os.path.join(directory, "cpu.cfs_period_us")))
    if quota is None or period is None or quota <= 0 or period <= 0:
        return None
    return quota / period


def oom_kills(base: str) -> int | None:
    """How many processes the cgroup's OOM killer has stopped so far (None: not readable)."""
    if version(base) == "v2":
        events = keyed(_read(os.path.join(base, "memory.events")))
    else:
        events = keyed(_read(os.path.join(base, "memory", "memory.oom_control")))
    return events.get("oom_kill")


def host_memory_available() -> int | None:
    """MemAvailable from /proc/meminfo: the ceiling when the cgroup sets no limit."""
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemAvailable:"):
            parts = line.split()
            return int(parts[1]) * 1024 if len(parts) > 1 and parts[1].isdigit() else None
    return None


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, which `docker run --cpuset-cpus` narrows)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1
