"""What `pudev verify` shows about compiling here: the compiler cache (where, how full, hit rate)
and the compile jobs the container fits (MAX_JOBS, and what it was derived from)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from pudev.image.compilers import cgroup, parallelism
from pudev.image.compilers.launcher import CCACHE, cache_writable


@dataclass
class CompileFacts:
    cache_dir: str = ""
    cache_writable: bool = False
    ccache_version: str = ""  # "" when ccache is missing
    cache_bytes: int = 0
    cache_max_bytes: int = 0
    hits: int = 0
    misses: int = 0
    max_jobs: str = ""  # MAX_JOBS as this process sees it
    jobs_derived: bool = False
    cpus: int = 0
    memory_free: int | None = None
    memory_source: str = ""
    cgroup_version: str = ""


def parse_stats(text: str) -> dict[str, int]:
    """`ccache --print-stats`: one `key<TAB>value` per line."""
    return cgroup.keyed(text, "\t")


def collect(env: dict[str, str] | None = None) -> CompileFacts:
    env = dict(os.environ) if env is None else env
    budget = parallelism.budget(env)
    facts = CompileFacts(cache_dir=env.get("CCACHE_DIR", ""), cache_writable=cache_writable(env),
                         max_jobs=env.get("MAX_JOBS", ""), jobs_derived=parallelism.derived_by_us(env),
                         cpus=budget.cpus, memory_free=budget.memory, memory_source=budget.memory_source,
                         cgroup_version=budget.cgroup_version)
    if not os.access(CCACHE, os.X_OK):
        return facts
    try:
        version = subprocess.run([CCACHE, "--version"], capture_output=True, text=True, timeout=30, env=env,
                                 check=False)
        stats = subprocess.run([CCACHE, "--print-stats"], capture_output=True, text=True, timeout=30, env=env,
                               check=False)
    except (OSError, subprocess.SubprocessError):
        return facts
    facts.ccache_version = (version.stdout.split("\n")[0].split() or [""])[-1]
    numbers = parse_stats(stats.stdout)
    facts.cache_bytes = numbers.get("cache_size_kibibyte", 0) * 1024
    facts.cache_max_bytes = numbers.get("max_cache_size_kibibyte", 0) * 1024
    facts.hits = numbers.get("direct_cache_hit", 0) + numbers.get("preprocessed_cache_hit", 0)
    facts.misses = numbers.get("cache_miss", 0)
    return facts
