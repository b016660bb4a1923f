"""`pudev bench-build`: how fast the stand-in cu121 build is, cold and after the
usual edits, and how big its layers are. Stand-ins must already be built.

Scenarios, in order: naive (docker/bench/naive.Dockerfile, the single-stage
Dockerfile a newcomer would write for the same image, built with --no-cache), cold
(every step run again with --no-cache, the download caches in cache mounts emptied
first; the stand-in images and other images' cached steps stay), an in-image tool file
edited, one light pinned requirement changed (in the last package layer), one
heavy one changed (the first package of the first layer that the image itself
installs, by requirements/layers.txt), MIRROR changed, and a no-op rebuild.
A changed requirement is the lock resolved again with that one package at
another release and every other pin kept. Every edit is undone afterwards and
the normal image rebuilt. Emptying the cache mounts affects every build on this
engine (its next download is cold), so run it where that is fine.

Each scenario keeps BuildKit's own timing of every step it ran (`steps`), which is
where the time goes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pudev.building.buildlog import find_failure
from pudev.building.lock_slices import Layer, Pin, normalize, read_layers, read_pins
from pudev.building.plan import local_tag
from pudev.building.plan_assembly import BuildOptions, plan_builds
from pudev.building.requirement_locks import layers_path, lock_path
from pudev.common.errors import PudevError
from pudev.common.table import render_table
from pudev.config.model import Variant
from pudev.devtools.lock_resolver import base_packages, compile_lock
from pudev.engine import docker
from pudev.engine.layers import layer_history
from pudev.paths import REPO_ROOT, REQUIREMENTS_DIR

TOOL_FILE = REPO_ROOT / "scripts/pudev/image/gpumon.py"
# Of the cold build; "cold" is measured against the naive build. A heavy pin is any package
# layer's first package: all of them at most a fifth of cold.
TARGETS = {"cold": 0.50, "tool-edit": 0.03, "requirement-change": 0.20, "heavy-requirement-change": 0.20,
           "no-op": 0.02}
NAIVE_DOCKERFILE = REPO_ROOT / "docker/bench/naive.Dockerfile"
OS_PACKAGE_SCRIPT = REPO_ROOT / "docker/steps/install-os-packages.sh"
LIGHT_PROBE = "tqdm"  # small and often bumped: the last package layer's (a unit test checks)


@dataclass
class Measurement:
    scenario: str
    seconds: float
    ratio: float
    rebuilt: list[str]
    probe: str = ""  # the package whose pin changed, for the requirement scenarios
    steps: list[dict[str, Any]] = field(default_factory=list)  # BuildKit's seconds per step run


@dataclass(frozen=True)
class StepTime:
    step: str
    seconds: float


def _pudev(*args: str) -> tuple[float, str]:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "pudev.cli", *args], cwd=REPO_ROOT, capture_output=True,
                            text=True, check=False)
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise PudevError(f"pudev {' '.join(args)} failed during the benchmark: "
                         f"{docker.last_line(result.stderr or result.stdout)}")
    return elapsed, result.stdout


def step_times(log: str) -> list[StepTime]:
    """The build steps that ran (DONE without CACHED), as '[stage k/n] INSTRUCTION' with BuildKit's
    own seconds, plus the export. FROM lines are left out: BuildKit resolves base images on
    every build."""
    headers = {step: " ".join(text.split())[:90] for step, text in
               re.findall(r"^#(\d+) (\[[\w.-]+\s+\d+/\d+\] (?!FROM ).*|exporting to image)$", log, re.MULTILINE)}
    cached = set(re.findall(r"^#(\d+) CACHED", log, re.MULTILINE))
    done = dict(re.findall(r"^#(\d+) DONE (\d+(?:\.\d+)?)s", log, re.MULTILINE))
    return [StepTime(headers[step], float(seconds)) for step, seconds in done.items()
            if step in headers and step not in cached]


def rebuilt_steps(log: str) -> list[str]:
    return [item.step for item in step_times(log) if item.step != "exporting to image"]


def heavy_probe(layers: list[Layer], pins: list[Pin], shipped: set[str]) -> str:
    """The first package named in the first layer that the lock pins and the base does not ship
    (the base's own copy is never reinstalled, so changing its pin would change nothing)."""
    installed = {pin.name for pin in pins} - shipped
    for package in layers[0].packages:
        if package in installed:
            return package
    raise PudevError(f"the first package layer ({layers[0].name}) installs nothing from this lock")


def _changed_lock(variant: Variant, package: str, base: list[str]) -> str:
    """The variant's lock with `package` at another release and every other pin kept, resolved the
    way `make lock` does."""
    lock = lock_path(variant)
    pins, _ = read_pins(lock.read_text())
    current = next((pin.version for pin in pins if pin.name == normalize(package)), None)
    if current is None:
        raise PudevError(f"{lock} pins no {package}; the benchmark changes that pin")
    kept = [f"{pin.name}=={pin.version}" for pin in pins if pin.name != normalize(package)]
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "lock.txt"
        compile_lock(REQUIREMENTS_DIR / "image.in", output, python=variant.python, platform=variant.platform,
                     constraints=[*base, *kept, f"{package}!={current}"])
        return output.read_text()


def _measure(profile: str, scenario: str, args: list[str], cold: float | None, probe: str = "") -> Measurement:
    seconds, log = _pudev("build", "--profile", profile, *args)
    ratio = seconds / cold if cold else 1.0
    return Measurement(scenario, seconds, ratio, rebuilt_steps(log), probe,
                       [asdict(item) for item in step_times(log)])


def os_packages() -> str:
    """The OS packages the real build installs, from its own list (the here-doc, comments dropped)."""
    listed = re.search(r"<<'PACKAGES'\n(.*?)\nPACKAGES\n", OS_PACKAGE_SCRIPT.read_text(), re.DOTALL)
    if listed is None:
        raise PudevError(f"{OS_PACKAGE_SCRIPT} has no PACKAGES here-doc; the naive build installs that list")
    return " ".join(line.split("#")[0].strip() for line in listed.group(1).splitlines() if line.split("#")[0].strip())


def _naive(variant: Variant, profile: str) -> Measurement:
    """The naive Dockerfile, built with nothing cached, then removed (its image is most of a base)."""
    (plan,) = plan_builds([variant], BuildOptions(no_cache=True), profile=profile)
    args = {key: plan.spec().args[key] for key in ("BASE_IMAGE", "TOOLKIT_A_IMAGE", "TOOLKIT_B_IMAGE",
                                                    "TOOLKIT_A_VERSION", "TOOLKIT_B_VERSION", "LOCK")}
    tag = f"pudev-bench/naive:{variant.name}"
    command = ["build", "--progress=plain", "--no-cache", "--file", str(NAIVE_DOCKERFILE), "--tag", tag]
    for key, value in {**args, "OS_PACKAGES": os_packages()}.items():
        command += ["--build-arg", f"{key}={value}"]
    if plan.ca_bundle is not None:
        command += ["--secret", f"id=ca,src={plan.ca_bundle}"]
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


def run_scenarios(variant: Variant, profile: str) -> list[Measurement]:
    lock = lock_path(variant)
    original_tool, original_lock = TOOL_FILE.read_text(), lock.read_text()
    base = base_packages(variant.base_image)
    heavy = heavy_probe(read_layers(layers_path().read_text()), read_pins(original_lock)[0],
                        {normalize(pin.partition("==")[0]) for pin in base})
    changed = {name: _changed_lock(variant, name, base) for name in (LIGHT_PROBE, heavy)}  # before the clock runs
    # Only the cache mounts go: --no-cache reruns every step, and other images' cached steps
    # (the emulated arm64 base takes 11 minutes) stay for the builds after this one.
    docker.run(["builder", "prune", "--all", "--force", "--filter", "type=exec.cachemount"], timeout=1800)
    naive = _naive(variant, profile)
    docker.run(["builder", "prune", "--all", "--force", "--filter", "type=exec.cachemount"], timeout=1800)
    cold_run = _measure(profile, "cold", ["--no-cache"], naive.seconds)
    results = [naive, cold_run]
    cold = cold_run.seconds
    try:
        TOOL_FILE.write_text(original_tool + f"\n# bench-build probe {time.time()}\n")
        results.append(_measure(profile, "tool-edit", [], cold))
        TOOL_FILE.write_text(original_tool)
        for scenario, name in (("requirement-change", LIGHT_PROBE), ("heavy-requirement-change", heavy)):
            lock.write_text(changed[name])
            results.append(_measure(profile, scenario, [], cold, probe=name))
            lock.write_text(original_lock)
        results.append(_measure(profile, "mirror-change", ["--mirror", "tuna"], cold))
        results.append(_measure(profile, "no-op", ["--mirror", "tuna"], cold))
    finally:
        TOOL_FILE.write_text(original_tool)
        lock.write_text(original_lock)
        _pudev("build", "--profile", profile)  # leave the normal image behind
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
        target = TARGETS.get(item.scenario)
        verdict = "-" if target is None else ("ok" if item.ratio <= target else f"MISSED (<= {target:.0%})")
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
                               "targets": TARGETS}, indent=2) + "\n")
    return render(results, sizes, previous)
