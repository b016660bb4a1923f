"""End-to-end tests against a real Docker engine.

The session brings the engine up (scripts/host-setup.sh engine: installs and
starts it when root on Debian/Ubuntu, otherwise says how), then builds what its
shard's tests ask for (tests/e2e/shards.py): each stand-in build through the
production Dockerfile, from the stand-ins it names, once per run. The
cross-cutting tests run on the newest profile's image (`latest`'s variant);
each build's own tests run in the shard that makes it.
Without an engine these tests skip with the reason; PUDEV_REQUIRE_ENGINE=1 (set
by .ci/run) turns that skip into a failure.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kept_between_runs
import pytest
from browser_session import missing_browser_tools
from container_logs import LogWatch
from e2e_support import LocalImage, Profiles, SuiteRun, run_pudev, skip_or_fail
from podman_engine import RootlessPodman
from realistic_registry import RealisticRegistry
from shards import builds_used, newest_profile

from pudev.common.platforms import native_platform
from pudev.engine import docker
from pudev.paths import REPO_ROOT


@pytest.fixture(scope="session")
def docker_engine(request: pytest.FixtureRequest) -> str:
    setup = subprocess.run(["sh", str(REPO_ROOT / "scripts/host-setup.sh"), "engine"], check=False, capture_output=True,
                           text=True, timeout=300)
    if setup.returncode != 0:
        skip_or_fail(f"no Docker engine: {setup.stderr.strip()}")
    try:
        docker.require_daemon()
        cli = docker.docker_cli()
    except Exception as error:  # a PudevError naming the problem
        skip_or_fail(f"no usable Docker engine: {error}")
        raise
    shard = request.config.getoption("shard")
    if shard:  # a shard's make target: room for this shard first (kept_between_runs.py's disk policy)
        removed = kept_between_runs.release_for(builds_used(shard))
        print(f"\nshard {shard}: released {', '.join(removed) if removed else 'nothing'}")
    return cli


def _require_registry() -> None:
    if shutil.which("docker-registry") is None:
        skip_or_fail("docker-registry is not installed (sudo apt-get install docker-registry)")


@pytest.fixture(scope="module")
def realistic_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealisticRegistry]:
    """The registry that behaves like GHCR and Docker Hub (realistic_registry.py); processes only, no engine."""
    _require_registry()
    with RealisticRegistry(tmp_path_factory.mktemp("realistic-registry")) as server:
        yield server


@pytest.fixture(scope="session")
def run_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealisticRegistry]:
    """One registry per run for the release, podman and every-platform tests, its storage removed at the run's
    end (pytest keeps its last three temporary folders, and this one holds gigabytes). A registry kept between
    runs saved at most the 45 to 69 s the 2024 shard's release tests take on a new registry, and held 11 GB
    (2026-12-08)."""
    _require_registry()
    root = tmp_path_factory.mktemp("run-registry")
    try:
        with RealisticRegistry(root) as registry:
            yield registry
    finally:
        shutil.rmtree(root / "storage", ignore_errors=True)


@pytest.fixture(scope="session")
def standins(docker_engine: str) -> None:
    """The stand-ins the newest profile is built from, the OS image among them (each shard builds its own)."""
    run_pudev("standins", "--profile", newest_profile(), "--platform", native_platform(), timeout=3600, check=True)


@pytest.fixture(scope="session")
def browser_tools() -> None:
    """Debian's chromium and chromium-driver, which the browser tests drive (browser_session.py)."""
    missing = missing_browser_tools()
    if missing:
        skip_or_fail(f"{' and '.join(missing)} not installed: sh scripts/host-setup.sh tools")


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reports")


@pytest.fixture(scope="session")
def profiles(docker_engine: str, report_dir: Path) -> Profiles:
    return Profiles(report_dir)


@pytest.fixture(scope="session")
def newest_image(profiles: Profiles) -> LocalImage:
    """The stand-in build of the profile behind `latest`, where the cross-cutting tests run."""
    return profiles.image(newest_profile())


@pytest.fixture(scope="session")
def newest_suite(profiles: Profiles) -> SuiteRun:
    return profiles.suite(newest_profile())


@pytest.fixture(autouse=True)
def quiet_container_logs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[LogWatch]:
    """Every container a test runs through pudev's engine layer must print no WARNING, ERROR, CRITICAL or
    traceback line, unless the test allows it: @pytest.mark.allow_log(r"regex", ...) (container_logs.py)."""
    allowed = [re.compile(pattern) for marker in request.node.iter_markers("allow_log") for pattern in marker.args]
    watch = LogWatch(docker.run, allowed)
    monkeypatch.setattr(docker, "run", watch.run)
    podman_run = RootlessPodman.run

    def watched_podman_run(podman: RootlessPodman, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
        result = podman_run(podman, *args, **options)
        watch.after("podman", args, result)
        return result

    monkeypatch.setattr(RootlessPodman, "run", watched_podman_run)
    yield watch
    if watch.found:
        shown = "\n  ".join(watch.found[:20])
        pytest.fail(f"{len(watch.found)} unexpected warning/error line(s) in container output (allow a line by "
                    f"name with @pytest.mark.allow_log(r\"...\")):\n  {shown}", pytrace=False)
