"""`make bench-ext` (a maintainers' tool): a real CUDA extension compiled in the built image, the
way users compile it (`pip install --no-build-isolation` of its sdist), for one arch:

  cold       an empty compiler cache
  warm       the same sdist again in a new container (pip unpacks it in a new /tmp directory),
             with the cache volume kept: target at most 10% of cold
  wheelhouse `pudev wheel` once, then a fresh container with only the wheelhouse volume
             installs it: target at most 5% of cold
  ninja default / derived jobs
             cold again (cache off) under one memory cap, with MAX_JOBS left to ninja (one job
             per CPU + 2; PUDEV_NO_DERIVED_JOBS=1) and as pudev derives it from the cgroup: peak
             memory, OOM kills, whether it finished
  threads    (`--part threads`, issue 26) a package that hard-codes nvcc's `--threads 4` and four
             -gencode targets, its largest .cu compiled last: cold (cache off), no memory cap, with
             pudev's derived MAX_JOBS and threads, then ninja's default and the package's own
             threads (PUDEV_NO_DERIVED_JOBS=1). Target: derived at most 5% slower. The package is SYNTHETIC
             (tests/fixtures/threads-extension, shaped like the real one): the real one takes 40+
             minutes cold on 2 CPUs, this one minutes.

The sdist is fetched once on the host (pinned by sha256) from the package index's simple API (PEP 691
JSON: `pip download` of an sdist would build its metadata first, torch included) and mounted
read-only: the containers need no network (the synthetic source is mounted from the checkout).
Peak memory is the container cgroup's own high-water mark (page cache included); each compile's
own peak (PUDEV_COMPILE_LOG: its largest process, and the --threads nvcc ran with) is kept beside
it, the measure behind pudev's per-job memory figure.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import json
import os
import sys
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from pudev.common.errors import PudevError
from pudev.common.table import render_table
from pudev.engine import docker
from pudev.engine.containers import TRACKED_LABEL
from pudev.paths import REPO_ROOT

# NVIDIA's torch-harmonics: BuildExtension with ninja, 12 translation units (7 C++, 5 CUDA) in four
# extensions, no -gencode of its own (TORCH_CUDA_ARCH_LIST rules), builds on torch 2.4 to today's.
EXTENSION = {"name": "torch-harmonics", "version": "0.8.1",
             "sha256": "f9ff6b2a877e492c9a9fa98dec85eb4be36265e4ec737127fb6eb2537337e9ff"}
BUILD_ENV = {"TORCH_CUDA_ARCH_LIST": "8.0", "FORCE_CUDA_EXTENSION": "1"}  # CUDA kernels without a GPU here
MEMORY_CAP = "4g"  # room for one job of the heaviest file and pip, not for ninja's default
TARGETS = {"warm": 0.10, "wheelhouse": 0.05}
# `--part threads`: the synthetic package of issue 26, built from this checkout.
THREADS_SOURCE = REPO_ROOT / "tests" / "fixtures" / "threads-extension"
THREADS_EXTENSION = {
    "name": "pudev-threads-bench", "source": "tests/fixtures/threads-extension", "synthetic": True,
    "nvcc": "--threads 4 -gencode sm_75 sm_80 sm_86 sm_90 (setup.py's own; TORCH_CUDA_ARCH_LIST adds none)",
    "why": "synthetic: shaped like the package of issue 26 (setup.py hard-codes nvcc --threads 4 and its -gencode "
           "targets; its largest .cu, torch's headers and templated kernels for four dtypes, compiles last), whose "
           "real build takes 40+ minutes cold on 2 CPUs; this one takes minutes"}
THREADS_DERIVED, THREADS_NINJA = "threads: derived jobs and threads", "threads: ninja default, package's threads"
THREADS_TARGET = 1.05  # derived cold seconds / ninja's default cold seconds, at most
SDIST_CACHE = REPO_ROOT / "reports" / "sdists"
# Runs inside the container: the install, then the facts, as one JSON line.
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


def index_url() -> str:
    configured = os.environ.get("PIP_INDEX_URL")
    if configured:
        return configured.rstrip("/") + "/"
    from pip._internal.models.index import PyPI  # pip's default index, whatever it is today

    return PyPI.simple_url.rstrip("/") + "/"


def index_request(url: str, accept: str = "") -> urllib.request.Request:
    """A request to the index: a login in the URL (https://user:token@host/...) travels as a header, so it is
    never in the URL an error message repeats."""
    parts = urllib.parse.urlsplit(url)
    headers = {"Accept": accept} if accept else {}
    if parts.username is not None:
        login = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(login.encode()).decode()
        host = f"{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}"
        url = urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return urllib.request.Request(url, headers=headers)


def fetch_sdist(name: str, version: str, sha256: str, folder: Path) -> Path:
    """folder/NAME-VERSION.tar.gz, downloaded once and checked against its pinned hash."""
    folder.mkdir(parents=True, exist_ok=True)
    for existing in folder.glob("*.tar.gz"):
        if hashlib.sha256(existing.read_bytes()).hexdigest() == sha256:
            return existing
    project = urljoin(index_url(), f"{name.lower().replace('_', '-')}/")
    try:
        with urllib.request.urlopen(index_request(project, SIMPLE_JSON), timeout=60) as response:
            files = json.load(response)["files"]
    except (OSError, ValueError, KeyError) as error:
        host = urllib.parse.urlsplit(project).hostname
        raise PudevError(f"cannot list {name} on the package index at {host} ({type(error).__name__}); check the "
                         "network or PIP_INDEX_URL") from None
    wanted = [entry for entry in files if entry.get("hashes", {}).get("sha256") == sha256]
    if not wanted:
        raise PudevError(f"the package index has no file of {name} {version} with sha256 {sha256[:12]}...: "
                         "the pin in the benchmark is wrong or the release was withdrawn")
    target = folder / str(wanted[0]["filename"])
    try:
        with urllib.request.urlopen(index_request(urljoin(project, wanted[0]["url"])), timeout=300) as response:
            data = response.read()
    except (OSError, ValueError) as error:
        raise PudevError(f"cannot download {target.name} ({type(error).__name__})") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise PudevError(f"{target.name} does not match its pinned sha256: not using it")
    target.write_bytes(data)
    return target


MEASURE = r"""
start=$(date +%s.%N)
{install} > /tmp/build.log 2>&1
rc=$?
end=$(date +%s.%N)
python - "$rc" "$start" "$end" <<'EOF'
import json, os, re, subprocess, sys
def read(*paths):
    for path in paths:
        try:
            return open(path).read()
        except OSError:
            pass
    return ""
peak = read("/sys/fs/cgroup/memory.peak", "/sys/fs/cgroup/memory/memory.max_usage_in_bytes").strip()
events = read("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")
kills = re.search(r"oom_kill (\d+)", events)
stats = dict(line.split("\t", 1) for line in subprocess.run(["ccache", "--print-stats"], capture_output=True,
             text=True).stdout.splitlines() if "\t" in line)
log = open("/tmp/build.log").read()
jobs = [json.loads(line) for line in read("/tmp/compile-log.jsonl").splitlines() if line.strip()]
print(json.dumps({"rc": int(sys.argv[1]), "seconds": float(sys.argv[3]) - float(sys.argv[2]),
                  "peak_bytes": int(peak or 0), "oom_kills": int(kills.group(1)) if kills else -1,
                  "max_jobs": os.environ.get("MAX_JOBS", ""), "nvcc_compiles": log.count("compilers/nvcc"),
                  "hits": int(stats.get("direct_cache_hit", 0)) + int(stats.get("preprocessed_cache_hit", 0)),
                  "misses": int(stats.get("cache_miss", 0)), "jobs": jobs, "tail": log[-1500:]}))
EOF
"""


@dataclass
class Run:
    scenario: str
    ok: bool
    seconds: float
    ratio: float | None  # of the cold build; None for the memory runs, which are cold builds themselves
    peak_gib: float
    oom_kills: int
    max_jobs: str
    cache_hits: int
    cache_misses: int
    nvcc_compiles: int
    largest_job_gib: float  # the largest single compile's peak (0 when every compile was a cache hit)
    jobs: list[dict[str, Any]]  # PUDEV_COMPILE_LOG's lines: compiler, source, exit, seconds, peak_gib


def _container(image: str, options: list[str], install: str, source: Path, timeout: float) -> dict[str, Any]:
    """One build in a fresh container, `source` (an sdist or a source tree) mounted read-only in /bench."""
    name = f"pudev-bench-ext-{uuid.uuid4().hex[:8]}"
    env = [arg for key, value in {**BUILD_ENV, "PUDEV_COMPILE_LOG": "/tmp/compile-log.jsonl"}.items()
           for arg in ("--env", f"{key}={value}")]
    try:
        result = docker.run(["run", "--rm", "--name", name, "--label", f"{TRACKED_LABEL}=1", "--no-healthcheck", "-v",
                             f"{source.parent}:/bench:ro", *env, *options, image, "bash", "-c",
                             MEASURE.replace("{install}", install)], check=False, timeout=timeout)
    finally:
        docker.run(["rm", "-f", name], check=False, timeout=60)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise PudevError(f"bench-ext: the container printed no result (exit {result.returncode}): "
                         f"{(result.stdout + result.stderr)[-1500:]}")
    data: dict[str, Any] = json.loads(lines[-1])
    return data


def _run(scenario: str, data: dict[str, Any], cold: float | None) -> Run:
    seconds = float(data["seconds"])
    jobs = [{**{key: value for key, value in job.items() if key != "peak_bytes"},
             "peak_gib": round(job["peak_bytes"] / 1024**3, 2)} for job in data.get("jobs", [])]
    return Run(scenario=scenario, ok=data["rc"] == 0, seconds=round(seconds, 1),
               ratio=round(seconds / cold, 3) if cold else None, peak_gib=round(data["peak_bytes"] / 1024**3, 2),
               oom_kills=int(data["oom_kills"]), max_jobs=str(data["max_jobs"]) or "ninja default",
               cache_hits=int(data["hits"]), cache_misses=int(data["misses"]), nvcc_compiles=int(data["nvcc_compiles"]),
               largest_job_gib=max((job["peak_gib"] for job in jobs), default=0.0), jobs=jobs)


def speed_scenarios(image: str, sdist: Path, report: Callable[[Run], None]) -> None:
    """cold, warm (the cache volume kept), and a fresh container installing from the wheelhouse."""
    suffix = uuid.uuid4().hex[:8]
    cache, wheels = f"pudev-bench-ccache-{suffix}", f"pudev-bench-wheels-{suffix}"
    cache_mount = ["-v", f"{cache}:/var/cache/pudev/ccache"]
    wheel_mount = ["-v", f"{wheels}:/var/cache/pudev/wheels"]
    try:
        cold_data = _container(image, cache_mount, _install(sdist), sdist, 7200)
        if cold_data["rc"] != 0:
            raise PudevError(f"bench-ext: the cold build failed:\n{cold_data['tail']}")
        cold = float(cold_data["seconds"])
        report(_run("cold", cold_data, None))
        report(_run("warm", _container(image, cache_mount, _install(sdist), sdist, 7200), cold))
        made = _container(image, [*cache_mount, *wheel_mount], f"pudev wheel /bench/{sdist.name}", sdist, 7200)
        if made["rc"] != 0:
            raise PudevError(f"bench-ext: pudev wheel failed:\n{made['tail']}")
        from_house = "pip install -v --no-deps --no-index --target /tmp/site " + EXTENSION["name"]
        report(_run("wheelhouse", _container(image, wheel_mount, from_house, sdist, 1800), cold))
    finally:
        docker.run(["volume", "rm", "-f", cache, wheels], check=False)


def memory_scenarios(image: str, sdist: Path, report: Callable[[Run], None]) -> None:
    """The same cold build (cache off) under one memory cap: ninja's default jobs, then pudev's."""
    capped = ["--memory", MEMORY_CAP, "--memory-swap", MEMORY_CAP, "--env", "CCACHE_DISABLE=1"]
    report(_run(f"ninja default, {MEMORY_CAP} cap",
                _container(image, [*capped, "--env", "PUDEV_NO_DERIVED_JOBS=1"], _install(sdist), sdist, 7200), None))
    report(_run(f"derived jobs, {MEMORY_CAP} cap", _container(image, capped, _install(sdist), sdist, 7200), None))


def threads_scenarios(image: str, source: Path, report: Callable[[Run], None]) -> None:
    """The synthetic package of issue 26 built cold (cache off, no memory cap): pudev's derived MAX_JOBS and
    nvcc threads, then ninja's default with the package's own threads (PUDEV_NO_DERIVED_JOBS=1); derived first,
    so any cost of a cold page cache falls on our side. The source is copied out of the read-only mount
    first: pip builds a source tree in place."""
    options = ["--env", "CCACHE_DISABLE=1"]
    install = f"cp -r /bench/{source.name} /tmp/src && {_pip_install('/tmp/src')}"
    report(_run(THREADS_DERIVED, _container(image, options, install, source, 3600), None))
    report(_run(THREADS_NINJA, _container(image, [*options, "--env", "PUDEV_NO_DERIVED_JOBS=1"], install, source,
                                          3600), None))


def threads_summary(runs: list[Run]) -> dict[str, Any] | None:
    """Both cold times of `--part threads` and derived / ninja's default (None until both finished)."""
    found = {run.scenario: run for run in runs if run.ok}
    if THREADS_DERIVED not in found or THREADS_NINJA not in found:
        return None
    derived, ninja = found[THREADS_DERIVED].seconds, found[THREADS_NINJA].seconds
    return {"derived_seconds": derived, "ninja_default_seconds": ninja, "ratio": round(derived / ninja, 3),
            "target": THREADS_TARGET, "met": derived / ninja <= THREADS_TARGET}


def _pip_install(target: str) -> str:
    return f"pip install -v --no-deps --no-build-isolation --no-index --target /tmp/site {target}"


def _install(sdist: Path) -> str:
    return _pip_install(f"/bench/{sdist.name}")


PARTS = {"speed": speed_scenarios, "memory": memory_scenarios, "threads": threads_scenarios}


@functools.cache
def _torch_harmonics() -> Path:
    return fetch_sdist(EXTENSION["name"], EXTENSION["version"], EXTENSION["sha256"], SDIST_CACHE)


def bench_ext(out: Path, image: str, profile: str, parts: list[str]) -> str:
    """Runs the parts asked for; the JSON is written after every scenario (a long run stopped
    halfway still leaves its numbers)."""
    cpus = docker.run(["run", "--rm", "--entrypoint", "nproc", image]).stdout.strip()
    out.parent.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []

    def report(run: Run) -> None:
        runs.append(run)
        result = {"profile": profile, "image": image, "build_env": BUILD_ENV, "cpus": int(cpus or 0),
                  "targets": TARGETS,
                  **({"extension": EXTENSION, "memory_cap": MEMORY_CAP} if set(parts) - {"threads"} else {}),
                  **({"threads_extension": THREADS_EXTENSION, "threads": threads_summary(runs)}
                     if "threads" in parts else {}),
                  "runs": [asdict(each) for each in runs]}
        out.write_text(json.dumps(result, indent=2) + "\n")

    for part in parts:
        PARTS[part](image, THREADS_SOURCE if part == "threads" else _torch_harmonics(), report)
    rows = [[run.scenario, "ok" if run.ok else "FAILED", f"{run.seconds:.0f}",
             "" if run.ratio is None else f"{100 * run.ratio:.1f}%", f"{run.peak_gib:.2f}",
             f"{run.largest_job_gib:.2f}", str(run.oom_kills), run.max_jobs, f"{run.cache_hits}/{run.cache_misses}"]
            for run in runs]
    table = render_table(["scenario", "result", "seconds", "of cold", "peak GiB", "largest job GiB", "OOM kills",
                          "MAX_JOBS", "cache hit/miss"], rows)
    summary = threads_summary(runs)
    if summary is None:
        return table
    return (f"{table}\nthreads (synthetic package, {THREADS_EXTENSION['nvcc']}): derived "
            f"{summary['derived_seconds']:.0f} s / ninja's default {summary['ninja_default_seconds']:.0f} s = "
            f"{summary['ratio']:.3f} (target <= {THREADS_TARGET})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/bench_ext.py", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="local", help="the stand-in profile whose built image to use")
    parser.add_argument("--out", default="reports/bench-ext.json", metavar="PATH", help="JSON result")
    parser.add_argument("--part", action="append", choices=sorted(PARTS), default=[],
                        help="speed (cold, warm cache, wheelhouse), memory (under a cap), threads; default: all")
    args = parser.parse_args(argv)
    from pudev.building.plan import local_tag
    from pudev.config.selection import Selection, resolve

    try:
        (variant,) = resolve(Selection(profile=args.profile)).variants
        image = local_tag(variant)
        if docker.image_id(image) is None:
            raise PudevError(f"no image {image} here: build it first (pudev build --profile {args.profile})")
        print(bench_ext(Path(args.out), image, args.profile, args.part or list(PARTS)))
    except PudevError as error:
        print(f"bench_ext: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
