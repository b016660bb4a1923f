"""`pudev bench-build`: how fast the stand-in cu121 build is, cold and after the
usual edits, and how big its layers are. Stand-ins must already be built.

Scenarios, in order: cold (BuildKit's whole cache emptied, download caches in
cache mounts included; the stand-in images stay), an in-image tool file
edited, one light pinned requirement changed (in the last package layer), one
heavy one changed (the first package of the first layer that the image itself
installs, by requirements/layers.txt), MIRROR changed, and a no-op rebuild.
A changed requirement is the lock resolved again with that one package at
another release and every other pin kept. Every edit is undone afterwards and
the normal image rebuilt. Emptying the cache affects every build on this
engine, so run it where that is fine (CI).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pudev.building.lock_slices import Layer, Pin, normalize, read_layers, read_pins
from pudev.building.plan import local_tag
from pudev.building.requirement_locks import layers_path, lock_path
from pudev.common.errors import PudevError
from pudev.common.table import render_table
from pudev.config.model import Variant
from pudev.devtools.lock_resolver import base_packages, compile_lock
from pudev.engine import docker
from pudev.engine.layers import layer_history
from pudev.paths import REPO_ROOT, REQUIREMENTS_DIR

TOOL_FILE = REPO_ROOT / "scripts/pudev/image/gpumon.py"
TARGETS = {"tool-edit": 0.03, "requirement-change": 0.20, "no-op": 0.02}
LIGHT_PROBE = "tqdm"  # small and often bumped: the last package layer's (a unit test checks)


@dataclass
class Measurement:
    scenario: str
    seconds: float
    ratio: float
    rebuilt: list[str]
    probe: str = ""  # the package whose pin changed, for the requirement scenarios


def _pudev(*args: str) -> tuple[float, str]:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "pudev.cli", *args], cwd=REPO_ROOT, capture_output=True,
                            text=True, check=False)
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise PudevError(f"pudev {' '.join(args)} failed during the benchmark: "
                         f"{docker.last_line(result.stderr or result.stdout)}")
    return elapsed, result.stdout


def rebuilt_steps(log: str) -> list[str]:
    """The build steps that ran (DONE without CACHED), as '[stage k/n] INSTRUCTION'.
    FROM lines are left out: BuildKit resolves base images on every build."""
    headers = {step: " ".join(text.split())[:90] for step, text in
               re.findall(r"^#(\d+) (\[[\w.-]+\s+\d+/\d+\] (?!FROM ).*)$", log, re.MULTILINE)}
    cached = set(re.findall(r"^#(\d+) CACHED", log, re.MULTILINE))
    done = re.findall(r"^#(\d+) DONE", log, re.MULTILINE)
    return [headers[step] for step in dict.fromkeys(done) if step in headers and step not in cached]


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
    return Measurement(scenario, seconds, ratio, rebuilt_steps(log), probe)


def run_scenarios(variant: Variant, profile: str) -> list[Measurement]:
    lock = lock_path(variant)
    original_tool, original_lock = TOOL_FILE.read_text(), lock.read_text()
    base = base_packages(variant.base_image)
    heavy = heavy_probe(read_layers(layers_path().read_text()), read_pins(original_lock)[0],
                        {normalize(pin.partition("==")[0]) for pin in base})
    changed = {name: _changed_lock(variant, name, base) for name in (LIGHT_PROBE, heavy)}  # before the clock runs
    docker.run(["builder", "prune", "--all", "--force"], timeout=1800)
    results = [_measure(profile, "cold", ["--no-cache"], None)]
    cold = results[0].seconds
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
    lines = [render_table(["scenario", "seconds", "previous run", "of cold", "steps run", "target"], rows), "",
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
