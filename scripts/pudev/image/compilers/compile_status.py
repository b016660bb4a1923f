"""What `pudev verify` shows about compiling here: the compiler cache (where, how full, hit rate),
the compile jobs the container fits (MAX_JOBS, and what it was derived from), and whether torch can
build an extension where it builds them (writable, and on a mount that lets the result load)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from pudev.image.compilers import cgroup, parallelism
from pudev.image.compilers.launcher import CCACHE, cache_dir, existing_ancestor


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
    build_root: str = ""  # where torch.utils.cpp_extension builds (extension_build_root)
    build_root_writable: bool = False
    build_root_exec: bool = False  # False on a noexec mount: a built .so then cannot load


def extension_build_root(env: dict[str, str]) -> str:
    """Where torch.utils.cpp_extension builds: TORCH_EXTENSIONS_DIR, else torch_extensions in the user's
    cache folder (torch._appdirs.user_cache_dir: XDG_CACHE_HOME, else ~/.cache)."""
    if env.get("TORCH_EXTENSIONS_DIR"):
        return env["TORCH_EXTENSIONS_DIR"]
    cache = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME", "/"), ".cache")
    return os.path.join(cache, "torch_extensions")


def _build_root_facts(root: str) -> tuple[bool, bool]:
    """(writable, exec) for the folder torch would build in, judged where it exists or would be made."""
    there = existing_ancestor(root)
    if there is None:
        return False, False
    try:
        noexec = bool(os.statvfs(there).f_flag & os.ST_NOEXEC)
    except OSError:
        noexec = False
    return os.access(there, os.W_OK | os.X_OK), not noexec


def parse_stats(text: str) -> dict[str, int]:
    """`ccache --print-stats`: one `key<TAB>value` per line."""
    return cgroup.keyed(text, "\t")


def collect(env: dict[str, str] | None = None) -> CompileFacts:
    env = dict(os.environ) if env is None else env
    budget = parallelism.budget(env)
    used = cache_dir(env)  # the folder compiles use: CCACHE_DIR, else the fallback under HOME
    facts = CompileFacts(cache_dir=used or env.get("CCACHE_DIR", ""), cache_writable=used is not None,
                         max_jobs=env.get("MAX_JOBS", ""), jobs_derived=parallelism.derived_by_us(env),
                         cpus=budget.cpus, memory_free=budget.memory, memory_source=budget.memory_source,
                         cgroup_version=budget.cgroup_version, build_root=extension_build_root(env))
    facts.build_root_writable, facts.build_root_exec = _build_root_facts(facts.build_root)
    if not os.access(CCACHE, os.X_OK):
        return facts
    try:
        version = subprocess.run([CCACHE, "--version"], capture_output=True, text=True, timeout=30, env=env,
                                 check=False)
        stats = subprocess.run([CCACHE, "--print-stats"], capture_output=True, text=True, timeout=30,
                               env={**env, "CCACHE_DIR": used} if used else env,
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
