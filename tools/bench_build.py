"""`make bench-build` (a maintainers' tool, outside the pudev package): how long the stand-in build
takes, cold and after the usual edits, and how much a user downloads again after each. Stand-ins
must be built. It works on a copy of the build context (PUDEV_ROOT), never on the checkout.

Scenarios, in order:
  naive            docker/bench/naive.Dockerfile, the single-stage Dockerfile a newcomer would write for
                   the same image, --no-cache
  cold             the real Dockerfile, --no-cache, the download caches (cache mounts) emptied first
  tool-edit        an in-image tool file edited
  pin-PART         one pin changed in each package step's part of the lock (rarely-changing: its first
                   package the image itself installs; the-rest: tqdm): the lock resolved again with that
                   package at another release, every other pin kept
  mirror-change    MIRROR changed
  no-op            nothing changed
Naive and cold are timed SAMPLES times each, in turn, and compared by their medians. Every scenario
after naive builds on the base plus a small layer naming the run, so none reuses what an earlier run
built; those steps' build cache is dropped at the end. Each scenario keeps BuildKit's own timing of the
steps it ran, and `download`: the compressed size of the layers that differ from the image before it,
as a registry holds them (each image is pushed to a throwaway local registry), which is what a user
pulls again. Emptying the cache mounts affects every build on this engine: run it where that is fine.
`--checkout DIR` measures another checkout's Dockerfile with its own pudev (DIR/.venv), the "before" of a
change in the same run; `--scenarios` runs some of them (the naive build is the same for both).
Usage: python tools/bench_build.py --profile local --out reports/bench-build-local.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pudev.building.buildlog import find_failure
from pudev.building.labels import copy_context
from pudev.building.plan import BUILD_NETWORK, local_tag
from pudev.building.plan_assembly import BuildOptions, plan_builds
from pudev.building.requirement_locks import lock_path, rarely_changing_path
from pudev.common.errors import PudevError
from pudev.common.lock_file import names_in, normalize, pinned, read_pins
from pudev.common.table import render_table
from pudev.config.model import Variant
from pudev.config.selection import Selection, resolve
from pudev.devtools.lock import base_packages, compile_lock
from pudev.engine import docker
from pudev.paths import REPO_ROOT, REQUIREMENTS_DIR
from pudev.registry.client import RegistryClient

TOOL_FILE = "scripts/pudev/image/gpumon.py"
NAIVE_DOCKERFILE = REPO_ROOT / "docker/bench/naive.Dockerfile"
OS_PACKAGE_SCRIPT = REPO_ROOT / "docker/steps/install-os-packages.sh"
LIGHT_PROBE = "tqdm"  # small and often bumped: one of the rest's packages
# Of the cold build; cold itself of the naive one. `download_mb`: what a user pulls again.
TARGETS = {"cold": 0.80, "tool-edit": 0.10, "no-op": 0.05}
DOWNLOAD_TARGETS_MB = {"pin-the-rest": 80.0}
OWN_LAYERS_TARGET_MB = 520.0  # the image's own layers, compressed (cu121)
SAMPLES = 3
IO_PRESSURE = Path("/proc/pressure/io")
QUIET_IO_PERCENT = 1.0
SETTLE_LIMIT_S = 180


@dataclass
class Measurement:
    scenario: str
    seconds: float
    ratio: float  # of cold (cold: of naive)
    rebuilt: list[str]
    probe: str = ""  # the package whose pin changed
    download_bytes: int = 0  # the changed layers, compressed as a registry holds them
    steps: list[dict[str, Any]] = field(default_factory=list)
    samples: list[float] = field(default_factory=list)


def median_of(runs: list[Measurement]) -> Measurement:
    """The run with the median time (an odd number of runs), which keeps every run's time in `samples`."""
    if len(runs) % 2 == 0:
        raise ValueError(f"the median of {len(runs)} runs is no one run's; take an odd number")
    middle = sorted(runs, key=lambda run: run.seconds)[len(runs) // 2]
    return Measurement(middle.scenario, middle.seconds, middle.ratio, middle.rebuilt, middle.probe,
                       middle.download_bytes, middle.steps, [run.seconds for run in runs])


def io_pressure(text: str) -> float:
    """PSI's "some avg10" from /proc/pressure/io's text."""
    found = re.search(r"^some avg10=(\d+(?:\.\d+)?)", text, re.MULTILINE)
    if found is None:
        raise PudevError(f"{IO_PRESSURE} has no 'some avg10' line; the benchmark reads the kernel's PSI format")
    return float(found[1])


def _settle() -> None:
    """Before the clock starts: write back what the last build left in the page cache and wait until the
    disk is idle, so each time is that build's own (benchmarks.md: what an unsettled disk cost)."""
    os.sync()
    deadline = time.monotonic() + SETTLE_LIMIT_S
    while IO_PRESSURE.exists() and io_pressure(IO_PRESSURE.read_text()) >= QUIET_IO_PERCENT \
            and time.monotonic() < deadline:
        time.sleep(2)


def step_times(log: str) -> list[dict[str, Any]]:
    """The build steps that ran, '[stage k/n] INSTRUCTION' with BuildKit's own seconds, plus the export."""
    headers = {step: " ".join(text.split())[:90] for step, text in
               re.findall(r"^#(\d+) (\[[\w.-]+\s+\d+/\d+\] (?!FROM ).*|exporting to image)$", log, re.MULTILINE)}
    done = dict(re.findall(r"^#(\d+) DONE (\d+(?:\.\d+)?)s", log, re.MULTILINE))
    return [{"step": headers[step], "seconds": float(seconds)} for step, seconds in done.items() if step in headers]


def rebuilt_steps(log: str) -> list[str]:
    return [item["step"] for item in step_times(log) if item["step"] != "exporting to image"]


def os_packages() -> str:
    """The OS packages the real build installs, from its own list (the here-doc, comments dropped)."""
    listed = re.search(r"<<'PACKAGES'\n(.*?)\nPACKAGES\n", OS_PACKAGE_SCRIPT.read_text(), re.DOTALL)
    if listed is None:
        raise PudevError(f"{OS_PACKAGE_SCRIPT} has no PACKAGES here-doc; the naive build installs that list")
    return " ".join(line.split("#")[0].strip() for line in listed.group(1).splitlines() if line.split("#")[0].strip())


def extra_compilers(record: dict[str, Any]) -> list[str]:
    """The older g++ an image record names beside the default one (g++-11 for CUDA 11.8 on a gcc 12 base):
    the naive build installs them too, or it would build a smaller image than the one it is measured against."""
    return sorted({toolkit["host_compiler"] for toolkit in record["toolkits"] if toolkit["host_compiler"] != "g++"})


def context_copy(folder: Path, checkout: Path = REPO_ROOT) -> Path:
    """The build context (.dockerignore's allowlist) copied, to edit without touching the checkout."""
    root = folder / "repo"
    if checkout != REPO_ROOT:  # another checkout's allowlist may differ: all of it but what never builds
        shutil.copytree(checkout, root, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", "site", "reports", "__pycache__", "*.egg-info"))
        return root
    return copy_context(root)


class Bench:
    """One profile's scenarios, on a copy of the build context, each image pushed to a local registry."""

    def __init__(self, variant: Variant, profile: str, root: Path, registry: str, checkout: Path = REPO_ROOT) -> None:
        self.variant, self.profile, self.root, self.registry = variant, profile, root, registry
        self.checkout = checkout
        self.lock = root / lock_path(variant).relative_to(REPO_ROOT)
        self.layers: dict[str, int] = {}  # diff_id -> compressed size, of the image last measured

    def pudev(self, *args: str) -> tuple[float, str]:
        _settle()
        python = sys.executable if self.checkout == REPO_ROOT else str(self.checkout / ".venv/bin/python")
        started = time.monotonic()
        result = subprocess.run([python, "-m", "pudev.cli", *args], capture_output=True, text=True,
                                check=False, cwd=self.checkout, env={**os.environ, "PUDEV_ROOT": str(self.root)})
        elapsed = time.monotonic() - started
        if result.returncode != 0:
            failure = find_failure((result.stdout + result.stderr).splitlines())
            detail = "\n".join(failure.log_tail) if failure else (result.stdout + result.stderr)[-3000:]
            raise PudevError(f"pudev {' '.join(args)} failed during the benchmark:\n{detail}")
        return elapsed, result.stdout

    def measure(self, scenario: str, args: list[str], cold: float | None, probe: str = "") -> Measurement:
        seconds, log = self.pudev("build", "--profile", self.profile, *args)
        return Measurement(scenario, seconds, seconds / cold if cold else 1.0, rebuilt_steps(log), probe,
                           self.pushed_again(), step_times(log))

    def pushed_again(self) -> int:
        """Push the profile's image; the compressed bytes of the layers the last measured image lacked."""
        layers = push_sizes(local_tag(self.variant), self.registry)
        again = sum(size for diff_id, size in layers.items() if diff_id not in self.layers)
        self.layers = layers
        return again


def push_sizes(image: str, registry: str) -> dict[str, int]:
    """diff_id -> compressed size of each layer of `image`, as a registry holds it after `docker push`."""
    target = f"{registry}/pudev-bench/image:latest"
    docker.run(["tag", image, target])
    try:
        docker.run(["push", target], timeout=3600)
    finally:
        docker.run(["rmi", target], check=False)
    client = RegistryClient(registry, retries=2)
    manifest = json.loads(client.manifest("pudev-bench/image", "latest")[0])
    config = json.loads(client.get_blob("pudev-bench/image", manifest["config"]["digest"]))
    return {diff_id: int(layer["size"])
            for diff_id, layer in zip(config["rootfs"]["diff_ids"], manifest["layers"], strict=True)}


@contextmanager
def local_registry(folder: Path) -> Iterator[str]:
    """A throwaway Distribution on 127.0.0.1 (plain HTTP: the engine allows it for loopback)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = folder / "registry.yml"
    config.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {folder / 'storage'}\n"
                      f"http:\n  addr: 127.0.0.1:{port}\n")
    process = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                RegistryClient(address, retries=0).ping()
                break
            except PudevError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        yield address
    finally:
        process.terminate()
        process.wait(timeout=30)


def changed_locks(variant: Variant, package: str, lock_text: str, base: list[str]) -> list[tuple[str, str]]:
    """SAMPLES versions of the lock, each with `package` at a release neither the lock nor an earlier one
    pins, every other pin kept, resolved as `make lock` does; each with that release."""
    current = pinned(lock_text).get(normalize(package))
    if current is None:
        raise PudevError(f"the lock pins no {package}; the benchmark changes that pin")
    kept = [f"{pin.name}=={pin.version}" for pin in read_pins(lock_text) if pin.name != normalize(package)]
    avoided, changed = [current], []
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "lock.txt"
        for _ in range(SAMPLES):
            compile_lock(REQUIREMENTS_DIR / "image.in", output, python=variant.python, platform=variant.platform,
                         constraints=[*base, *kept, *(f"{package}!={version}" for version in avoided)])
            release = pinned(output.read_text()).get(normalize(package), "")
            changed.append((output.read_text(), release))
            avoided.append(release)
    return changed


def probes(lock_text: str, shipped: set[str]) -> dict[str, str]:
    """The package whose pin each part's scenario changes: the first rarely changing package the image itself
    installs (the base's own copy is never reinstalled), and LIGHT_PROBE for the rest."""
    rarely = names_in(rarely_changing_path().read_text())
    installed = [pin.name for pin in read_pins(lock_text) if pin.name not in shipped]
    first = next((name for name in installed if name in rarely), None)
    if first is None or normalize(LIGHT_PROBE) not in installed:
        raise PudevError("the lock has no rarely changing package or no tqdm the image installs; nothing to pin")
    return {"rarely-changing": first, "the-rest": LIGHT_PROBE}


def _naive(bench: Bench, packages: str) -> Measurement:
    (plan,) = plan_builds([bench.variant], BuildOptions(no_cache=True), profile=bench.profile)
    args = {key: plan.spec().args[key] for key in ("BASE_IMAGE", "TOOLKIT_A_IMAGE", "TOOLKIT_B_IMAGE",
                                                    "TOOLKIT_A_VERSION", "TOOLKIT_B_VERSION", "LOCK")}
    tag = f"pudev-bench/naive:{bench.variant.name}"
    # On the network pudev's own builds use, so the two differ in the Dockerfile alone (and an engine
    # without a default bridge can build it).
    command = ["build", "--progress=plain", "--no-cache", "--network", BUILD_NETWORK, "--file", str(NAIVE_DOCKERFILE),
               "--tag", tag]
    for key, value in {**args, "OS_PACKAGES": packages}.items():
        command += ["--build-arg", f"{key}={value}"]
    if plan.ca_bundle is not None:
        command += ["--secret", f"id=ca,src={plan.ca_bundle}"]
    _settle()
    started = time.monotonic()
    result = docker.run([*command, str(bench.root)], check=False, timeout=3600)
    seconds = time.monotonic() - started
    docker.run(["rmi", "--force", tag], check=False)
    log = result.stderr + result.stdout
    if result.returncode != 0:
        failure = find_failure(log.splitlines())
        detail = "\n".join(failure.log_tail) if failure else docker.last_line(result.stderr)
        raise PudevError(f"the naive build failed during the benchmark:\n{detail}")
    return Measurement("naive", seconds, 1.0, rebuilt_steps(log), steps=step_times(log))


def _run_base(variant: Variant) -> str:
    """The base plus one small layer naming this run: every step on it is keyed anew, so no scenario reuses
    what an earlier benchmark run built for the same edit."""
    tag = f"pudev-bench/base:{variant.name}"
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "run").write_text(f"{time.time_ns()}\n")
        (Path(folder) / "Dockerfile").write_text(f"FROM {variant.base_image}\nCOPY run /etc/pudev-bench-run\n")
        docker.run(["build", "--quiet", "--tag", tag, folder], timeout=600)
    return tag


def _empty_cache(everything: bool) -> None:
    """The cache mounts (downloads), or with `everything` the whole build cache: a sample's no-cache build
    uses neither, and the engine then keeps one build's worth on disk, which the containerd store (each
    image twice: compressed and unpacked) would otherwise overrun."""
    only_mounts = [] if everything else ["--filter", "type=exec.cachemount"]
    docker.run(["builder", "prune", "--all", "--force", *only_mounts], timeout=1800)


SCENARIOS = ("naive", "cold", "tool-edit", "pin-rarely-changing", "pin-the-rest", "mirror-change", "no-op")


def run_scenarios(bench: Bench, only: frozenset[str] = frozenset(SCENARIOS), *, empty_all: bool = False
                  ) -> tuple[list[Measurement], dict[str, int]]:
    """The scenarios in `only` (cold always: the rest build on it), and the own layers' compressed sizes of
    the cold build's image."""
    variant, lock_text = bench.variant, bench.lock.read_text()
    shipped = base_packages(variant.base_image)
    chosen = {part: name for part, name in probes(lock_text, {normalize(pin.partition("==")[0]) for pin in shipped}
                                                  ).items() if f"pin-{part}" in only}
    changed = {part: changed_locks(variant, name, lock_text, shipped) for part, name in chosen.items()}
    _, _ = bench.pudev("build", "--profile", bench.profile)
    record = json.loads(docker.run(["run", "--rm", "--network", "none", "--entrypoint", "cat", local_tag(variant),
                                    "/etc/pudev/image.json"], timeout=600).stdout)
    naive_packages = f"{os_packages()} {' '.join(extra_compilers(record))}".strip()
    naive_runs, cold_runs = [], []
    for _ in range(SAMPLES):
        if "naive" in only:
            _empty_cache(empty_all)
            naive_runs.append(_naive(bench, naive_packages))
        _empty_cache(empty_all)
        on_run_base = ["--base-image", _run_base(variant)]
        bench.layers = {}
        cold_runs.append(bench.measure("cold", [*on_run_base, "--no-cache"], None))
        # The image the last sample built, outside the clock: the containerd store holds each one twice.
        docker.run(["image", "prune", "--force", "--filter", "label=org.pudev.variant"], check=False, timeout=600)
    cold_run = median_of(cold_runs)
    results = [cold_run]
    if naive_runs:
        naive = median_of(naive_runs)
        cold_run.ratio = cold_run.seconds / naive.seconds
        results.insert(0, naive)
    own = {diff_id: size for diff_id, size in bench.layers.items()
           if diff_id not in push_sizes(on_run_base[1], bench.registry)}
    if "tool-edit" in only:
        tool = bench.root / TOOL_FILE
        tool.write_text(tool.read_text() + f"\n# bench-build probe {time.time()}\n")
        results.append(bench.measure("tool-edit", on_run_base, cold_run.seconds))
    before_pins = dict(bench.layers)
    for part, name in chosen.items():
        runs = []
        for changed_lock, release in changed[part]:
            bench.lock.write_text(changed_lock)
            bench.layers = dict(before_pins)  # what a user pulled before this pin: the image without it
            runs.append(bench.measure(f"pin-{part}", on_run_base, cold_run.seconds, probe=f"{name} {release}"))
        bench.lock.write_text(lock_text)
        results.append(median_of(runs))
    bench.layers = dict(before_pins)
    if "mirror-change" in only:
        results.append(bench.measure("mirror-change", [*on_run_base, "--mirror", "tuna"], cold_run.seconds))
    if "no-op" in only:  # the build just measured again, as it is
        mirror = ["--mirror", "tuna"] if "mirror-change" in only else []
        results.append(bench.measure("no-op", [*on_run_base, *mirror], cold_run.seconds))
    return results, own


def render(results: list[Measurement], own: dict[str, int]) -> str:
    rows = []
    for item in results:
        goal, download_goal = TARGETS.get(item.scenario), DOWNLOAD_TARGETS_MB.get(item.scenario)
        missed = [f"<= {goal:.0%}" for _ in [0] if goal is not None and item.ratio > goal]
        missed += [f"<= {download_goal:.0f} MB" for _ in [0]
                   if download_goal is not None and item.download_bytes / 1e6 > download_goal]
        verdict = "-" if goal is None and download_goal is None else ("MISSED " + ", ".join(missed) if missed else "ok")
        rows.append([f"{item.scenario} ({item.probe})" if item.probe else item.scenario, f"{item.seconds:.1f}",
                     f"{item.ratio:.1%}", f"{item.download_bytes / 1e6:.1f}", len(item.rebuilt), verdict])
    total = sum(own.values()) / 1e6
    return "\n".join([render_table(["scenario", "seconds", "of cold (cold: of naive)", "pulled again, MB",
                                    "steps run", "target"], rows), "",
                      f"the image's own layers, compressed: {total:.0f} MB"
                      f" (target <= {OWN_LAYERS_TARGET_MB:.0f} MB for cu121)"])


def bench_build(out: Path, profile: str, *, checkout: Path = REPO_ROOT,
                only: frozenset[str] = frozenset(SCENARIOS), empty_all: bool = False) -> str:
    (variant,) = resolve(Selection(profile=profile)).variants
    with tempfile.TemporaryDirectory(prefix="pudev-bench-") as folder, local_registry(Path(folder)) as registry:
        bench = Bench(variant, profile, context_copy(Path(folder), checkout), registry, checkout)
        try:
            results, own = run_scenarios(bench, only, empty_all=empty_all)
        finally:
            docker.run(["rmi", f"pudev-bench/base:{variant.name}"], check=False)
            docker.run(["image", "prune", "--force", "--filter", "label=org.pudev.variant"], check=False, timeout=600)
    subprocess.run([sys.executable, "-m", "pudev.cli", "build", "--profile", profile], check=False, cwd=REPO_ROOT)
    out.parent.mkdir(parents=True, exist_ok=True)
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True,
                              check=False).stdout.strip()
    engine = docker.run(["info", "--format", "{{.ServerVersion}} {{.Driver}} {{json .DriverStatus}}"]
                        ).stdout.strip().split(" ", 2)
    store = "containerd" if "io.containerd.snapshotter" in engine[2] else engine[1]  # its driver says overlayfs
    out.write_text(json.dumps({"measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "image": local_tag(variant),
                               "engine": f"Docker {engine[0]}, {store} image store",
                               "checkout": "this" if checkout == REPO_ROOT else f"commit {revision}",
                               "scenarios": [asdict(item) for item in results],
                               "own_layers_bytes": sorted(own.values(), reverse=True),
                               "targets": TARGETS, "download_targets_mb": DOWNLOAD_TARGETS_MB,
                               "own_layers_target_mb": OWN_LAYERS_TARGET_MB}, indent=2) + "\n")
    return render(results, own)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/bench_build.py", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="local", help="the stand-in profile to build")
    parser.add_argument("--out", default="reports/bench-build.json", metavar="PATH", help="JSON result")
    parser.add_argument("--checkout", default=str(REPO_ROOT), metavar="DIR",
                        help="measure this checkout's Dockerfile with its own pudev (DIR/.venv): a change's before")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"some of {', '.join(SCENARIOS)}")
    parser.add_argument("--empty-build-cache", action="store_true",
                        help="before each naive and cold sample, empty the engine's whole build cache (every "
                             "project's), not only its cache mounts: for an engine of the benchmark's own")
    args = parser.parse_args(argv)
    only = frozenset(args.scenarios.split(","))
    if not only <= set(SCENARIOS):
        parser.error(f"--scenarios {args.scenarios}: choose from {', '.join(SCENARIOS)}")
    try:
        print(bench_build(Path(args.out), args.profile, checkout=Path(args.checkout).resolve(), only=only,
                          empty_all=args.empty_build_cache))
    except PudevError as error:
        print(f"bench_build: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
