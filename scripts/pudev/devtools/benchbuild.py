"""`pudev bench-build`: how fast the stand-in cu121 build is, cold and after the
usual edits, and how big its layers are. Stand-ins must already be built.

Scenarios, in order: naive (docker/bench/naive.Dockerfile, the single-stage
Dockerfile a newcomer would write for the same image, built with --no-cache), cold
(every step run again with --no-cache, the download caches in cache mounts emptied
first; the stand-in images and other images' cached steps stay), an in-image tool file
edited, one pin changed in each package layer of requirements/layers.txt (its
first listed package that the image itself installs; in the layer that names
none, the light and often bumped tqdm), first with the layers cut from the new lock
(`pudev lock`), then with them kept as they were (`pudev lock --keep-layers`), MIRROR
changed, and a no-op rebuild.
A changed requirement is the lock resolved again with that one package at
another release and every other pin kept. Every scenario after the naive one
builds on the base plus a small layer naming the run, so none can reuse the
steps an earlier run built for the same edit, and those steps' build cache is
dropped at the end. Every edit is undone afterwards and the normal image rebuilt.
Emptying the cache mounts affects every build on this engine (its next download is
cold), so run it where that is fine.

Every build starts from a settled disk (the page cache written back, and the kernel's
I/O pressure gone quiet) and after the removal of the image the last build replaced
(pudev removes it after it returns), so each time is that build's own. Each scenario keeps
BuildKit's own timing of every step it ran (`steps`), which is where the time goes.
The naive and the cold build are timed SAMPLES times each, in turn, and compared by
their medians (every sample is kept in `samples`); each layer's pin is changed to
SAMPLES other releases in turn (the newest the lock does not pin first, each named in
`releases`), and its median kept the same way. The naive build
installs the OS packages the image holds: the real build's list and the older g++
that a toolkit's nvcc needs where the base's default is too new (the image's record).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pudev.building.buildlog import find_failure
from pudev.building.lock_slices import Layer, Pin, layer_of, normalize, read_layers, read_pins
from pudev.building.plan import local_tag
from pudev.building.plan_assembly import BuildOptions, plan_builds
from pudev.building.requirement_locks import layered_lock_path, layers_path, lock_path
from pudev.common.errors import PudevError
from pudev.common.table import render_table
from pudev.config.model import Variant
from pudev.devtools.lock_resolver import base_packages, compile_lock, keep_layers
from pudev.engine import docker
from pudev.engine.layers import layer_history
from pudev.paths import REPO_ROOT, REQUIREMENTS_DIR

TOOL_FILE = REPO_ROOT / "scripts/pudev/image/gpumon.py"
# Of the cold build; "cold" is measured against the naive build. A pin changed in any package
# layer: at most a fifth of cold, both with the layers cut from the new lock (PIN_CHANGE + the
# layer's name: `pudev lock`) and with them kept as they were (PIN_KEPT: `pudev lock --keep-layers`,
# the pin installed in a step over them).
PIN_CHANGE = "pin-change-"
PIN_KEPT = "pin-kept-"
TARGETS = {"cold": 0.50, "tool-edit": 0.03, PIN_CHANGE: 0.20, PIN_KEPT: 0.20, "no-op": 0.02}
NAIVE_DOCKERFILE = REPO_ROOT / "docker/bench/naive.Dockerfile"
OS_PACKAGE_SCRIPT = REPO_ROOT / "docker/steps/install-os-packages.sh"
LIGHT_PROBE = "tqdm"  # small and often bumped: the catch-all package layer's (a unit test checks)
# This machine's speed moves from one build to the next: one cold build took 32 to 56 s within an
# hour (2026-12-04, the hypervisor's steal 1 to 12%, apt's step 16 to 34 s). One sample of each
# side makes the cold build's ratio a draw; the median of three, taken in turn, does not.
SAMPLES = 3


def target(scenario: str) -> float | None:
    return TARGETS.get(next((pin for pin in (PIN_CHANGE, PIN_KEPT) if scenario.startswith(pin)), scenario))


@dataclass
class Measurement:
    scenario: str
    seconds: float
    ratio: float
    rebuilt: list[str]
    probe: str = ""  # the package whose pin changed, for the requirement scenarios
    steps: list[dict[str, Any]] = field(default_factory=list)  # BuildKit's seconds per step run
    samples: list[float] = field(default_factory=list)  # every timing, where `seconds` is their median
    # The release the probe was pinned to in each sample, in the order of `samples`: releases of one
    # package can differ twofold in files (jedi 0.20 against 0.19), and with them the pin's cost.
    releases: list[str] = field(default_factory=list)


def median_of(runs: list[Measurement]) -> Measurement:
    """The run with the median time (an odd number of runs: a real run, its steps its own), which
    keeps every run's time in `samples`."""
    if len(runs) % 2 == 0:
        raise ValueError(f"the median of {len(runs)} runs is no one run's; take an odd number")
    middle = sorted(runs, key=lambda run: run.seconds)[len(runs) // 2]
    return Measurement(middle.scenario, middle.seconds, middle.ratio, middle.rebuilt, middle.probe, middle.steps,
                       [run.seconds for run in runs], [release for run in runs for release in run.releases])


@dataclass(frozen=True)
class StepTime:
    step: str
    seconds: float


IO_PRESSURE = Path("/proc/pressure/io")
QUIET_IO_PERCENT = 1.0  # PSI's "some" share over the last 10 s below which the disk counts as idle
SETTLE_LIMIT_S = 180


def io_pressure(text: str) -> float:
    """PSI's "some avg10" (the share of the last 10 s in which a task waited for I/O) from
    /proc/pressure/io's text."""
    found = re.search(r"^some avg10=(\d+(?:\.\d+)?)", text, re.MULTILINE)
    if found is None:
        raise PudevError(f"{IO_PRESSURE} has no 'some avg10' line; the benchmark reads the kernel's PSI format")
    return float(found[1])


def _settle() -> None:
    """Before the clock starts: write back what the last build left in the page cache, then wait
    (at most SETTLE_LIMIT_S) until the disk is idle. A build leaves gigabytes dirty, and the kernel
    flushed them while the next build ran: the first pin after the cold build paid for the cold
    build's writes (its COPY steps took 4.1 s on one profile and 2.5 s on the other, for the same
    files). Freed space goes on costing I/O after a prune returns: right after 10 to 20 GB were
    dropped, the naive build's toolkit COPY took 155 s instead of 5. A user's next build seldom
    starts seconds after the last one or after a prune. Without PSI (/proc/pressure/io) only the
    write-back is waited for."""
    os.sync()
    deadline = time.monotonic() + SETTLE_LIMIT_S
    while IO_PRESSURE.exists() and io_pressure(IO_PRESSURE.read_text()) >= QUIET_IO_PERCENT \
            and time.monotonic() < deadline:
        time.sleep(2)


def _pudev(*args: str) -> tuple[float, str]:
    _settle()
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "pudev.cli", *args], cwd=REPO_ROOT, capture_output=True,
                            text=True, check=False)
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise PudevError(f"pudev {' '.join(args)} failed during the benchmark: "
                         f"{docker.last_line(result.stderr or result.stdout)}")
    return elapsed, result.stdout


def step_times(log: str) -> list[StepTime]:
    """The build steps that ran (DONE with its seconds; a cached step says CACHED alone), as
    '[stage k/n] INSTRUCTION' with BuildKit's own seconds, plus the export. A step BuildKit reports
    CACHED and then runs all the same (seen once, for a package stage whose cache held two results;
    the cause is BuildKit's) ran. FROM lines are left out: BuildKit resolves base images on every build."""
    headers = {step: " ".join(text.split())[:90] for step, text in
               re.findall(r"^#(\d+) (\[[\w.-]+\s+\d+/\d+\] (?!FROM ).*|exporting to image)$", log, re.MULTILINE)}
    done = dict(re.findall(r"^#(\d+) DONE (\d+(?:\.\d+)?)s", log, re.MULTILINE))
    return [StepTime(headers[step], float(seconds)) for step, seconds in done.items() if step in headers]


def rebuilt_steps(log: str) -> list[str]:
    return [item.step for item in step_times(log) if item.step != "exporting to image"]


def layer_probes(layers: list[Layer], pins: list[Pin], shipped: set[str]) -> dict[str, str]:
    """Each package layer's probe: the first package it names that the lock pins and the base does not
    ship (the base's own copy is never reinstalled, so changing its pin would change nothing); in a
    layer that names none (it takes the rest), LIGHT_PROBE where it lands there. A layer with
    nothing to change in this lock has no probe."""
    installed = {pin.name for pin in pins} - shipped
    probes: dict[str, str] = {}
    for layer in layers:
        named = [package for package in layer.packages if package in installed]
        if named:
            probes[layer.name] = named[0]
        elif not layer.packages and normalize(LIGHT_PROBE) in installed \
                and layer_of(LIGHT_PROBE, layers) == layer.name:
            probes[layer.name] = LIGHT_PROBE
    if layers and layers[0].name not in probes:
        raise PudevError(f"the first package layer ({layers[0].name}) installs nothing from this lock")
    return probes


def pinned_release(lock_text: str, package: str) -> str | None:
    return next((pin.version for pin in read_pins(lock_text)[0] if pin.name == normalize(package)), None)


def _changed_locks(variant: Variant, package: str, base: list[str]) -> list[tuple[str, str]]:
    """SAMPLES versions of the variant's lock, each with `package` at a release neither the lock nor an
    earlier one pins (so no build can reuse another's steps) and every other pin kept, resolved the
    way `make lock` does; each with that release."""
    lock = lock_path(variant)
    text = lock.read_text()
    current = pinned_release(text, package)
    if current is None:
        raise PudevError(f"{lock} pins no {package}; the benchmark changes that pin")
    kept = [f"{pin.name}=={pin.version}" for pin in read_pins(text)[0] if pin.name != normalize(package)]
    avoided, changed = [current], []
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "lock.txt"
        for _ in range(SAMPLES):
            compile_lock(REQUIREMENTS_DIR / "image.in", output, python=variant.python, platform=variant.platform,
                         constraints=[*base, *kept, *(f"{package}!={version}" for version in avoided)])
            resolved = output.read_text()
            release = pinned_release(resolved, package)
            if release is None:
                raise PudevError(f"{lock} resolved again without {package} {', '.join(avoided)} pins no {package}; "
                                 "the benchmark changes that pin")
            changed.append((resolved, release))
            avoided.append(release)
    return changed


def _measure(variant: Variant, profile: str, scenario: str, args: list[str], cold: float | None, *,
             probe: str = "") -> Measurement:
    replaced = docker.image_id(local_tag(variant))
    seconds, log = _pudev("build", "--profile", profile, *args)
    _await_removal(replaced)
    ratio = seconds / cold if cold else 1.0
    return Measurement(scenario, seconds, ratio, rebuilt_steps(log), probe,
                       [asdict(item) for item in step_times(log)])


def _await_removal(image_id: str | None) -> None:
    """Wait (at most SETTLE_LIMIT_S) until the image a build replaced is gone or named again: pudev
    removes it after it returns, and the next build's clock must not run beside that removal."""
    deadline = time.monotonic() + SETTLE_LIMIT_S
    while image_id and time.monotonic() < deadline:
        info = docker.inspect_image(image_id)
        if info is None or info.get("RepoTags"):
            return
        time.sleep(0.5)


def os_packages() -> str:
    """The OS packages the real build installs, from its own list (the here-doc, comments dropped)."""
    listed = re.search(r"<<'PACKAGES'\n(.*?)\nPACKAGES\n", OS_PACKAGE_SCRIPT.read_text(), re.DOTALL)
    if listed is None:
        raise PudevError(f"{OS_PACKAGE_SCRIPT} has no PACKAGES here-doc; the naive build installs that list")
    return " ".join(line.split("#")[0].strip() for line in listed.group(1).splitlines() if line.split("#")[0].strip())


def _build_cache_records() -> dict[str, dict[str, str]]:
    listed = docker.run(["system", "df", "--verbose", "--format", "{{json .BuildCache}}"], timeout=600)
    return {record["ID"]: record for record in json.loads(listed.stdout or "[]")}


def _build_cache_ids(kind: str | None = None) -> set[str]:
    return {key for key, record in _build_cache_records().items() if kind in (None, record["CacheType"])}


def children_first(records: set[str], parents: dict[str, str]) -> list[str]:
    """`records` ordered so that each comes before its parent: BuildKit keeps a record that another
    one still builds on, so a parent pruned first would stay."""
    def depth(record: str) -> int:
        steps, seen = 0, {record}
        while (record := parents.get(record, "")) and record not in seen:
            steps, seen = steps + 1, seen | {record}
        return steps
    return sorted(records, key=lambda record: (-depth(record), record))


def _drop_build_cache_since(before: set[str], kind: str | None = None) -> None:
    """Prune the build cache records (of `kind`, or any) that are not among `before`."""
    records = _build_cache_records()
    made = {key for key, record in records.items() if key not in before and kind in (None, record["CacheType"])}
    parents = {key: record.get("Parent", "") for key, record in records.items()}
    for record in children_first(made, parents):  # by full id: no short one matches
        docker.run(["builder", "prune", "--all", "--force", "--filter", f"id={record}"], check=False, timeout=600)


def extra_compilers(record: dict[str, Any]) -> list[str]:
    """The older g++ packages an image record names beside the default g++ (a toolkit whose nvcc refuses
    the default one: g++-11 for CUDA 11.8 on a gcc 12 base). The real build derives them; the naive
    build must install them too, or it would build a smaller image than the one it is measured against."""
    return sorted({toolkit["host_compiler"] for toolkit in record["toolkits"] if toolkit["host_compiler"] != "g++"})


def _built_record(profile: str, variant: Variant) -> dict[str, Any]:
    """The record (/etc/pudev/image.json) of the profile's image, built first where it is not."""
    _pudev("build", "--profile", profile)
    shown = docker.run(["run", "--rm", "--network", "none", "--entrypoint", "cat", local_tag(variant),
                        "/etc/pudev/image.json"], timeout=600)
    return dict(json.loads(shown.stdout))


def _naive(variant: Variant, profile: str, packages: str) -> Measurement:
    """The naive Dockerfile, built with nothing cached, then removed with the build cache it made (about
    4.5 GB a run, both toolkits unpruned: a few runs would fill a disk)."""
    before = _build_cache_ids()
    try:
        return _timed_naive(variant, profile, packages)
    finally:
        _drop_build_cache_since(before)


def _timed_naive(variant: Variant, profile: str, packages: str) -> Measurement:
    (plan,) = plan_builds([variant], BuildOptions(no_cache=True), profile=profile)
    args = {key: plan.spec().args[key] for key in ("BASE_IMAGE", "TOOLKIT_A_IMAGE", "TOOLKIT_B_IMAGE",
                                                    "TOOLKIT_A_VERSION", "TOOLKIT_B_VERSION", "LOCK")}
    tag = f"pudev-bench/naive:{variant.name}"
    command = ["build", "--progress=plain", "--no-cache", "--file", str(NAIVE_DOCKERFILE), "--tag", tag]
    for key, value in {**args, "OS_PACKAGES": packages}.items():
        command += ["--build-arg", f"{key}={value}"]
    if plan.ca_bundle is not None:
        command += ["--secret", f"id=ca,src={plan.ca_bundle}"]
    _settle()
    started = time.monotonic()
    result = docker.run([*command, str(REPO_ROOT)], check=False, timeout=3600)
    seconds = time.monotonic() - started
    docker.run(["rmi", "--force", tag], check=False)
    log = result.stderr + result.stdout
    if result.returncode != 0:
        failure = find_failure(log.splitlines())
        detail = "\n".join(failure.log_tail) if failure else docker.last_line(result.stderr)
        raise PudevError(f"the naive build failed during the benchmark:\n{detail}")
    return Measurement("naive", seconds, 1.0, rebuilt_steps(log), steps=[asdict(item) for item in step_times(log)])


def _run_base(variant: Variant) -> str:
    """The variant's base plus one small layer naming this run. BuildKit keys an image by its layers
    (a label would change nothing), so every step built on this one is keyed anew and no scenario can
    reuse what an earlier benchmark run built for the same edit (BuildKit keeps those records, and a
    second run of the same layout would time cache hits)."""
    tag = f"pudev-bench/base:{variant.name}"
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "run").write_text(f"{time.time_ns()}\n")
        (Path(folder) / "Dockerfile").write_text(f"FROM {variant.base_image}\nCOPY run /etc/pudev-bench-run\n")
        docker.run(["build", "--quiet", "--tag", tag, folder], timeout=600)
    return tag


def run_scenarios(variant: Variant, profile: str) -> list[Measurement]:
    lock, layered = lock_path(variant), layered_lock_path(variant)
    original_tool, original_lock = TOOL_FILE.read_text(), lock.read_text()
    original_layered = layered.read_text() if layered.exists() else None
    shipped = base_packages(variant.base_image)
    probes = layer_probes(read_layers(layers_path().read_text()), read_pins(original_lock)[0],
                          {normalize(pin.partition("==")[0]) for pin in shipped})
    changed = {name: _changed_locks(variant, name, shipped) for name in probes.values()}  # before the clock runs
    naive_packages = f"{os_packages()} {' '.join(extra_compilers(_built_record(profile, variant)))}".strip()
    # Only the cache mounts go: --no-cache reruns every step, and other images' cached steps
    # (the emulated arm64 base takes 11 minutes) stay for the builds after this one.
    steps_before: set[str] | None = None
    naive_runs: list[Measurement] = []
    cold_runs: list[Measurement] = []
    results: list[Measurement] = []
    try:
        for _ in range(SAMPLES):
            docker.run(["builder", "prune", "--all", "--force", "--filter", "type=exec.cachemount"], timeout=1800)
            naive_runs.append(_naive(variant, profile, naive_packages))
            docker.run(["builder", "prune", "--all", "--force", "--filter", "type=exec.cachemount"], timeout=1800)
            if steps_before is None:
                steps_before = _build_cache_ids("regular")
            else:  # the previous cold sample's steps (about 5 GB): the edits build on the last one's
                _drop_build_cache_since(steps_before, "regular")
            on_run_base = ["--base-image", _run_base(variant)]
            cold_runs.append(_measure(variant, profile, "cold", [*on_run_base, "--no-cache"], None))
        naive, cold_run = median_of(naive_runs), median_of(cold_runs)
        cold_run.ratio = cold_run.seconds / naive.seconds
        results += [naive, cold_run]
        cold = cold_run.seconds
        TOOL_FILE.write_text(original_tool + f"\n# bench-build probe {time.time()}\n")
        results.append(_measure(variant, profile, "tool-edit", on_run_base, cold))
        TOOL_FILE.write_text(original_tool)
        for scenario, layers_kept in ((PIN_CHANGE, False), (PIN_KEPT, True)):
            for layer, name in probes.items():
                pin_runs = []
                for changed_lock, release in changed[name]:
                    keep_layers(variant, keep=layers_kept)  # as `pudev lock [--keep-layers]` would, before it writes
                    lock.write_text(changed_lock)
                    pin_runs.append(_measure(variant, profile, scenario + layer, on_run_base, cold, probe=name))
                    lock.write_text(original_lock)
                    pin_runs[-1].releases = [release]
                results.append(median_of(pin_runs))
            keep_layers(variant, keep=False)
        results.append(_measure(variant, profile, "mirror-change", [*on_run_base, "--mirror", "tuna"], cold))
        results.append(_measure(variant, profile, "no-op", [*on_run_base, "--mirror", "tuna"], cold))
    finally:
        TOOL_FILE.write_text(original_tool)
        lock.write_text(original_lock)
        keep_layers(variant, keep=False)
        if original_layered is not None:
            layered.write_text(original_layered)
        # The steps built on the run's base (about 10 GB a run): nothing can reuse them, and a disk
        # that fills up slows the next run's builds. The cache mounts stay.
        if steps_before is not None:
            _drop_build_cache_since(steps_before, "regular")
        _pudev("build", "--profile", profile)  # leave the normal image behind, on the real base
        docker.run(["rmi", f"pudev-bench/base:{variant.name}"], check=False)
        # Each scenario's image, untagged by the next (about 10 GB a run, with the new base's steps).
        docker.run(["image", "prune", "--force", "--filter", "label=org.pudev.variant"], check=False, timeout=600)
    return results


def size_report(image: str, base: str) -> dict[str, Any]:
    info, base_info = docker.inspect_image(image), docker.inspect_image(base)
    if info is None or base_info is None:
        raise PudevError(f"{image} or its base {base} is missing; build them first")
    layers = layer_history(image)
    own = layers[len(layer_history(base)):]
    return {"image": image, "size": info["Size"], "base_size": base_info["Size"],
            "added_over_base": info["Size"] - base_info["Size"], "layers": own}


def render(results: list[Measurement], sizes: dict[str, Any], previous: dict[str, float] | None = None) -> str:
    rows = []
    for item in results:
        goal = target(item.scenario)
        verdict = "-" if goal is None else ("ok" if item.ratio <= goal else f"MISSED (<= {goal:.0%})")
        before = (previous or {}).get(item.scenario)
        name = f"{item.scenario} ({item.probe})" if item.probe else item.scenario
        rows.append([name, f"{item.seconds:.1f}", "-" if before is None else f"{before:.1f}",
                     f"{item.ratio:.1%}", len(item.rebuilt), verdict])
    mib = 1024**2
    lines = [render_table(["scenario", "seconds", "previous run", "of cold (cold: of naive)", "steps run", "target"],
                          rows), "",
             f"image {sizes['size'] / mib:.0f} MiB = base {sizes['base_size'] / mib:.0f} MiB + "
             f"{sizes['added_over_base'] / mib:.0f} MiB added", ""]
    lines.append(render_table(["MiB", "instruction"], [[f"{layer['size'] / mib:.1f}", layer["created_by"][:100]]
                                                        for layer in sizes["layers"] if layer["size"]]))
    return "\n".join(lines)


def bench_build(out: Path, variant: Variant, profile: str, compare: Path | None = None) -> str:
    previous = None
    if compare is not None:
        earlier = json.loads(compare.read_text())
        previous = {item["scenario"]: float(item["seconds"]) for item in earlier["scenarios"]}
    results = run_scenarios(variant, profile)
    sizes = size_report(local_tag(variant), variant.base_image)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                               "scenarios": [asdict(item) for item in results], "sizes": sizes,
                               "targets": {item.scenario: goal for item in results
                                           if (goal := target(item.scenario)) is not None}}, indent=2) + "\n")
    return render(results, sizes, previous)
