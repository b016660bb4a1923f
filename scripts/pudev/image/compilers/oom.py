"""One line when the container's OOM killer stopped a compiler, instead of "Killed" deep in pip's log.

Two places say it: the compiler launcher, right where the compiler died, and a build front end
(pip, setup.py) as its very last line, when the cgroup's oom_kill counter rose while it ran.
Standard library only: the front-end watch is set up at every Python start-up.
"""

from __future__ import annotations

import atexit
import os
import sys

from pudev.image.compilers import cgroup, parallelism

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping

GIB = 1024**3
WATCH_MARK = "PUDEV_OOM_WATCH"  # set by the outermost front end, so its children stay quiet


def _gib(value: int) -> str:
    return f"{value / GIB:.1f} GiB"


def message(what: str, env: Mapping[str, str], *, many: bool = False) -> str:
    base = cgroup.root(env)
    limit = cgroup.memory_limit(base)
    where = (f"this container may use {_gib(limit)} (cgroup {cgroup.version(base) or '?'} memory limit)"
             if limit is not None else "the host ran out of memory (the container has no memory limit)")
    jobs = env.get("MAX_JOBS", "")
    if not jobs:
        ran = "MAX_JOBS unset (ninja runs one job per CPU + 2)"
    else:
        ran = f"MAX_JOBS={jobs}" + (" (derived by pudev)" if jobs == env.get(parallelism.DERIVED_MARK) else "")
    verb = "were" if many else "was"
    return (f"pudev: {what} {verb} killed for lack of memory: {where}, {ran}; build with fewer jobs "
            f"(MAX_JOBS=1, and NVCC_APPEND_FLAGS='--threads 1' for nvcc) or give the container more "
            f"memory (docker run --memory ...)")


def is_build_front_end(argv: list[str]) -> bool:
    """pip (as a script or `python -m pip`) and `python setup.py`: what users run to build. At
    start-up `python -m pip install X` shows as ['-m', 'install', 'X']: the module name is not there yet."""
    if not argv:
        return False
    program = os.path.basename(argv[0])
    return (program.startswith("pip") or program == "setup.py"
            or (argv[0] == "-m" and len(argv) > 1 and argv[1] in ("install", "wheel")))


def watch(env: MutableMapping[str, str], argv: list[str]) -> None:
    """In a build front end: at exit, one line if the OOM killer struck while it ran."""
    if env.get(WATCH_MARK) or not is_build_front_end(argv):
        return
    base = cgroup.root(env)
    before = cgroup.oom_kills(base)
    if before is None:
        return
    env[WATCH_MARK] = "1"

    def report() -> None:
        after = cgroup.oom_kills(base)
        if after is not None and after > before:
            count = after - before
            what = "a compiler" if count == 1 else f"{count} processes (compilers, most likely)"
            print(message(what, env, many=count > 1), file=sys.stderr)

    atexit.register(report)
