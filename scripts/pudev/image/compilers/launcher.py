"""pudev-compile: every compiler a build starts passes through here on its way to ccache.

How it is reached (docker/steps/setup-compilers.sh makes the links):
  /opt/pudev/compilers/bin/{cc,gcc,c++,g++}   first on PATH: setup.py, pip, torch's ninja files on
                                              every torch release, Makefiles, CMake's C and C++
  /opt/pudev/compilers/nvcc                   PYTORCH_NVCC: torch's ninja files (2.4 onwards)
                                              call the active toolkit's nvcc through it
  pudev-compile COMPILER ARGS...              CMAKE_CUDA_COMPILER_LAUNCHER (and any launcher slot)

What it adds on the way:
  - nvcc's NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS move onto the command line, so the cache
    key holds them (-ccbin of the toolkit's host compiler, --threads, -gencode ...): ccache
    does not read nvcc's environment, and would hand back objects built with other flags.
  - nvcc's --threads (device compilations at once inside one job, which packages hard-code)
    is kept while MAX_JOBS x threads device compilations fit the memory MAX_JOBS was derived
    from, and lowered to what fits when they do not (parallelism.py says why memory alone).
    Threads the user set (NVCC_*_FLAGS), a MAX_JOBS of their own, or PUDEV_NO_DERIVED_JOBS
    leave it alone.
  - The child's PATH loses the masquerade directory, so nvcc's own host-compiler calls go
    straight to g++ and are not cached twice.
  - The compiler is the OOM killer's first choice (oom_score_adj raised to COMPILER_OOM_SCORE_ADJ,
    which any process may do to itself): when a build runs the container out of memory, the kernel
    stops a compile, which this launcher and the build's front end name, and not the build's front
    end, a Jupyter kernel or the shell, which may be bigger than a compiler that is just starting.
  - A compile the OOM killer broke (the cgroup's oom_kill count rose) gets one line saying so, with the
    container's limit.

Runs under `python -S` (no site-packages, fast): standard library only.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import subprocess
import sys
import time

from pudev.image.compilers import cgroup, masquerade, oom, parallelism

CCACHE = "/usr/local/bin/ccache"
LAUNCHER_NAME = "pudev-compile"
THREAD_FLAGS = ("--threads", "-t")
TARGET_FLAGS = ("-gencode", "--generate-code")  # one device compilation each
SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c", ".C")


COMPILER_OOM_SCORE_ADJ = 500  # of -1000..1000: half the container's memory added to a compiler's score
OOM_SCORE_ADJ = "/proc/self/oom_score_adj"


class LaunchError(Exception):
    pass


def prefer_compilers_for_oom(path: str = OOM_SCORE_ADJ) -> None:
    """Raise this process's oom_score_adj (the compiler it starts inherits it), never lower it."""
    try:
        with open(path, encoding="ascii") as handle:
            current = int(handle.read().strip() or 0)
        if current < COMPILER_OOM_SCORE_ADJ:
            with open(path, "w", encoding="ascii") as handle:
                handle.write(str(COMPILER_OOM_SCORE_ADJ))
    except (OSError, ValueError):
        pass  # a /proc that will not say or take it (some sandboxes): the kernel's own choice stands


def real_compiler(name: str, env: dict[str, str]) -> str:
    """The compiler a masquerade name stands for: the active toolkit's nvcc, else the next on PATH."""
    if name == "nvcc":
        return os.path.join(env.get("CUDA_HOME") or "/usr/local/cuda", "bin", "nvcc")
    found = masquerade.next_on_path(name, env.get("PATH", ""))
    if found is None:
        raise LaunchError(f"no {name} on PATH besides pudev's compiler cache ({masquerade.MASQUERADE})")
    return found


def split_command(argv: list[str], env: dict[str, str]) -> tuple[str, list[str]]:
    """(compiler, its arguments) from how this was started: through a link, or as a launcher."""
    invoked, rest = os.path.basename(argv[0]), argv[1:]
    if invoked != LAUNCHER_NAME:
        return real_compiler(invoked, env), rest
    if not rest:
        raise LaunchError(f"usage: {LAUNCHER_NAME} COMPILER [ARGS...]")
    compiler, rest = rest[0], rest[1:]
    if os.path.dirname(os.path.realpath(compiler)) in (os.path.realpath(masquerade.MASQUERADE),
                                                        os.path.realpath(masquerade.HOME)):
        compiler = real_compiler(os.path.basename(compiler), env)  # CMake found our own link
    return compiler, rest


def thread_count(args: list[str]) -> int | None:
    """nvcc's --threads N / --threads=N / -t N, if given (0 means one per CPU)."""
    for index, arg in enumerate(args):
        if arg in THREAD_FLAGS and index + 1 < len(args) and args[index + 1].isdigit():
            return int(args[index + 1])
        for flag in THREAD_FLAGS:
            if arg.startswith(flag + "=") and arg[len(flag) + 1:].isdigit():
                return int(arg[len(flag) + 1:])
    return None


def with_threads(args: list[str], threads: int) -> list[str]:
    """args with every thread-count flag set to `threads`."""
    result, skip = [], False
    for index, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in THREAD_FLAGS and index + 1 < len(args) and args[index + 1].isdigit():
            result += [arg, str(threads)]
            skip = True
        elif any(arg.startswith(flag + "=") and arg[len(flag) + 1:].isdigit() for flag in THREAD_FLAGS):
            result.append(f"{arg.split('=', 1)[0]}={threads}")
        else:
            result.append(arg)
    return result


def target_count(args: list[str]) -> int:
    """Device compilations nvcc is asked for: one per -gencode (0 when only -arch or nothing says)."""
    return sum(arg in TARGET_FLAGS or arg.startswith(tuple(flag + "=" for flag in TARGET_FLAGS)) for arg in args)


def nvcc_arguments(args: list[str], env: dict[str, str]) -> list[str]:
    """nvcc's command line with its environment flags folded in and its threads fitted to the memory."""
    prepend = shlex.split(env.pop("NVCC_PREPEND_FLAGS", ""))
    append = shlex.split(env.pop("NVCC_APPEND_FLAGS", ""))
    user_threads = thread_count(prepend + append) is not None
    full = [*prepend, *args, *append]
    asked = thread_count(full)
    if asked is None or user_threads or env.get(parallelism.OPT_OUT) or not parallelism.derived_by_us(env):
        return full
    jobs = int(env.get("MAX_JOBS") or 1)  # unset: a build no Python started (a shell's cmake): one job known
    threads = parallelism.build_budget(env).nvcc_threads(jobs, asked, target_count(full))
    return full if threads == asked else with_threads(full, threads)


def under_ccache() -> bool:
    """Whether a ccache started us (CC="ccache gcc", CMAKE_CXX_COMPILER_LAUNCHER=ccache): cache once."""
    try:
        return os.path.basename(os.readlink(f"/proc/{os.getppid()}/exe")) == "ccache"
    except OSError:
        return False


def cache_dir(env: dict[str, str]) -> str | None:
    """The cache ccache can write: CCACHE_DIR, else ccache's own default, ~/.cache/ccache; None: neither.
    A read-only root (--read-only, Kubernetes' readOnlyRootFilesystem) leaves the image's CCACHE_DIR read-only
    while the documented hardened run's home is a writable tmpfs: the cache then lives there, for the
    container's life. ccache fails the compile outright when it cannot write its cache (a read-only or
    root-owned bind mount): with neither, compile uncached rather than not at all (`pudev verify` says why,
    and pudev.image.homecheck says so once when torch's extension builder is imported)."""
    default = os.path.join(env.get("HOME", "/"), ".cache", "ccache")
    for directory in dict.fromkeys((env.get("CCACHE_DIR") or default, default)):
        there = existing_ancestor(directory)
        if there is not None and os.access(there, os.W_OK | os.X_OK):
            return directory
    return None


def cache_writable(env: dict[str, str]) -> bool:
    return cache_dir(env) is not None


def existing_ancestor(path: str) -> str | None:
    """`path` or its nearest folder above that exists (where a tool would create it), or None."""
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return path


def _log_compile(path: str, compiler: str, args: list[str], code: int, seconds: float) -> None:
    """One JSON line per compile (PUDEV_COMPILE_LOG): how the per-job memory figure is measured. The peak is
    the largest single process under this one (cc1plus, cicc, ptxas), from the kernel's own accounting."""
    sources = [arg for arg in args if arg.endswith(SOURCE_SUFFIXES)]
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    entry: dict[str, object] = {"compiler": os.path.basename(compiler),
                                "source": os.path.basename(sources[-1]) if sources else "", "exit": code,
                                "seconds": round(seconds, 2), "peak_bytes": peak}
    threads = thread_count(args)
    if threads is not None:  # the --threads nvcc ran with, after nvcc_arguments fitted it
        entry["threads"] = threads
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
    except OSError:
        pass  # a measurement aid: never a reason to fail a compile


def run(argv: list[str], env: dict[str, str]) -> int:
    compiler, args = split_command(argv, env)
    if os.path.basename(compiler) == "nvcc":
        args = nvcc_arguments(args, env)
    env["PATH"] = masquerade.without_masquerade(env.get("PATH", ""))
    directory = cache_dir(env)
    cached = os.access(CCACHE, os.X_OK) and directory is not None and not under_ccache()
    if cached and directory != env.get("CCACHE_DIR"):
        env["CCACHE_DIR"] = str(directory)  # the fallback under HOME (cache_dir says when)
    command = [CCACHE, compiler, *args] if cached else [compiler, *args]
    base = cgroup.root(env)
    kills_before = cgroup.oom_kills(base)
    prefer_compilers_for_oom()
    started = time.monotonic()
    try:
        code = subprocess.call(command, env=env)
    except OSError as error:
        raise LaunchError(f"cannot run {compiler}: {error.strerror}") from None
    if env.get("PUDEV_COMPILE_LOG"):
        _log_compile(env["PUDEV_COMPILE_LOG"], compiler, args, code, time.monotonic() - started)
    if code != 0:  # the OOM killer picks the biggest process: cc1plus or cicc, under g++'s or nvcc's driver
        kills_after = cgroup.oom_kills(base)
        if kills_before is not None and kills_after is not None and kills_after > kills_before:
            sources = [arg for arg in args if arg.endswith(SOURCE_SUFFIXES)]
            what = os.path.basename(compiler) + (f" compiling {os.path.basename(sources[-1])}" if sources else "")
            print(oom.message(what, env), file=sys.stderr)
    return 128 - code if code < 0 else code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return run(argv, dict(os.environ))
    except LaunchError as error:
        print(f"{LAUNCHER_NAME}: error: {error}", file=sys.stderr)
        return 2
