"""One run of the in-image suite in a fresh, always-removed container: the CPU half, the
GPU half, both, or the platform scope (the CPU half's `platform` tests, what an emulated
platform can afford), tallied per half from the suite's JUnit report. `pudev test VARIANT`
runs it on local builds; a candidate by digest runs it through release/test.py."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from pudev.common.environment import setting
from pudev.common.errors import PudevError
from pudev.common.halves import PLATFORM_SCOPE, SUITE_HALVES
from pudev.engine import docker, emulation, images
from pudev.engine.containers import TrackedContainer, sweep
from pudev.testing import localpasses

REPORT_MOUNT = "/pudev-report"
# A compiler cache kept between runs for the suite's extension build, mounted where the host names one
# (e2e's emulated platform scope does; tests/image/conftest.py reads the same variable inside).
KEPT_CCACHE = "PUDEV_SUITE_CCACHE_DIR"
KEPT_CCACHE_MOUNT = "/pudev-ccache"
HALF_PROPERTY = "pudev.half"  # each JUnit test case's half, from its gpu marker (tests/image/conftest.py)
GPU_MODULE = "test_gpu"  # the GPU half in reports without HALF_PROPERTY: tests/image/test_gpu.py


@dataclass
class SuiteOutcome:
    code: int
    gpus: bool  # whether the container got GPUs
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # half -> passed/failed/skipped

    def half_passed(self, half: str) -> bool:
        """A half passed when its tests ran and none failed or skipped (a skipped GPU test proves nothing)."""
        tally = self.counts.get(half, {})
        return tally.get("passed", 0) > 0 and tally.get("failed", 0) == 0 and tally.get("skipped", 0) == 0


def container_options(report_dir: Path, *, gpus: bool, require_gpu: bool) -> list[str]:
    options = ["--shm-size", "2g", "--volume", f"{report_dir}:{REPORT_MOUNT}"]
    if gpus:
        options += ["--gpus", "all"]
    environment = {variable: setting(variable) for variable in ("PUDEV_REQUIRE_GPU", "PUDEV_STRICT")
                   if variable in os.environ}
    if require_gpu:
        environment["PUDEV_REQUIRE_GPU"] = "1"
    if os.environ.get(KEPT_CCACHE):
        options += ["--volume", f"{os.environ[KEPT_CCACHE]}:{KEPT_CCACHE_MOUNT}"]
        environment[KEPT_CCACHE] = KEPT_CCACHE_MOUNT
    for key, value in environment.items():
        options += ["--env", f"{key}={value}"]
    return options


def tally(junit: Path) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {half: {"passed": 0, "failed": 0, "skipped": 0} for half in SUITE_HALVES}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        half = _half_of(case)
        if case.find("skipped") is not None:
            counts[half]["skipped"] += 1
        elif case.find("failure") is not None or case.find("error") is not None:
            counts[half]["failed"] += 1
        else:
            counts[half]["passed"] += 1
    return counts


def scope_counts(half: str, counts: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The tally by what the run proves: a platform scope's tests are CPU tests, yet no whole CPU half."""
    return {PLATFORM_SCOPE: counts["cpu"]} if half == PLATFORM_SCOPE else counts


def _half_of(case: ElementTree.Element) -> str:
    """The half the suite itself reports (its gpu marker, as a JUnit property); images built before it
    reported one count tests/image/test_gpu.py alone as the GPU half."""
    for prop in case.iter("property"):
        if prop.get("name") == HALF_PROPERTY and prop.get("value") in SUITE_HALVES:
            return str(prop.get("value"))
    return "gpu" if GPU_MODULE in (case.get("classname") or "").split(".") else "cpu"


def run_image_tests(image: str, *, timeout: float, half: str = "all", junit: Path | None = None,
                    pytest_args: list[str] | None = None) -> SuiteOutcome:
    """Run the suite in `image` (present locally). `half`: all, cpu, gpu (demands a GPU) or platform."""
    docker.require_daemon()
    sweep()
    info = docker.inspect_image(image)
    foreign = docker.platform_of(info) if info is not None else ""
    if foreign:  # another platform's image runs under emulation, if any
        emulation.require_runnable(foreign, f"pudev test {image}")
        if half in ("all", "cpu"):
            print(f"pudev: {image} is a {foreign} image: under emulation its CPU half takes many times longer than "
                  f"natively; --platform-only runs the checks that prove the platform", file=sys.stderr, flush=True)
    image_id = docker.image_id(image)  # before the run: a tag moved meanwhile must not get this run's pass
    gpus = docker.has_gpu_runtime()
    print(f"pudev: testing {image} ({half}) {'with' if gpus else 'without'} GPUs", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="pudev-report-") as report_dir:
        os.chmod(report_dir, 0o777)  # the image's non-root user writes the report
        command = ["pudev", "selftest", "--junit", f"{REPORT_MOUNT}/junit.xml"]
        if half != "all":
            command.append(f"--{half}-only")
        command += ["--", *(pytest_args or [])]
        options = container_options(Path(report_dir), gpus=gpus, require_gpu=half == "gpu")
        options += ["--platform", foreign] if foreign else []
        with TrackedContainer(image, purpose="test", options=options) as container:
            code = container.run_attached(command, timeout=timeout)
        report = Path(report_dir) / "junit.xml"
        counts = scope_counts(half, tally(report)) if report.exists() else {}
        if junit is not None and report.exists():
            junit.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(report, junit)
    if code != 0:
        _require_daemon_still_up(image)
    outcome = SuiteOutcome(code=code, gpus=gpus, counts=counts)
    if not pytest_args:  # a partial run proves no half
        _remember_passes(image_id, outcome)
    return outcome


def _remember_passes(image_id: str | None, outcome: SuiteOutcome) -> None:
    for name in outcome.counts:
        if image_id is not None and outcome.code == 0 and outcome.half_passed(name):
            localpasses.remember(image_id, name, outcome.counts[name])


def _require_daemon_still_up(image: str) -> None:
    try:
        docker.require_daemon()
    except PudevError as error:
        raise PudevError(f"the Docker daemon went away while testing {image}: {error}") from None


@dataclass(frozen=True)
class LocalBuild:
    tag: str  # the build's local tag
    build_hint: str  # the command that builds it, for the error when it is not there


def run_local_builds(builds: Sequence[LocalBuild], *, half: str, timeout: float, junit: Path | None,
                      pytest_args: list[str]) -> int:
    """`pudev test VARIANT...`: every image must be there before the first run starts; stops at the first failure."""
    docker.require_daemon()  # so that a missing image below means "not built", not "no engine"
    for build in builds:
        images.require_image(build.tag, build_hint=build.build_hint)
    for build in builds:
        outcome = run_image_tests(build.tag, timeout=timeout, half=half, junit=junit, pytest_args=pytest_args)
        if outcome.code != 0:
            return outcome.code
    return 0
