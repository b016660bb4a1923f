"""End-to-end tests against a real Docker engine.

The session brings the engine up (scripts/host-setup.sh engine: installs and
starts it when root on Debian/Ubuntu, otherwise says how), builds the stand-ins
and every stand-in profile through the production Dockerfile (`local`: the 2024
line; `local-current`: today's), then tests them. Most behaviour tests run on
`local`; the build and the in-image suite run on every profile.
Without an engine these tests skip with the reason; PUDEV_REQUIRE_ENGINE=1 (set
by .ci/run) turns that skip into a failure.
"""

from __future__ import annotations

import os
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
from e2e_support import LocalImage, Profiles, SuiteRun, run_pudev, skip_or_fail, tidy_mid_run
from podman_engine import RootlessPodman
from realistic_registry import RealisticRegistry

from pudev.engine import docker
from pudev.paths import REPO_ROOT


@pytest.fixture(scope="session")
def docker_engine() -> str:
    setup = subprocess.run(["sh", str(REPO_ROOT / "scripts/host-setup.sh"), "engine"], check=False, capture_output=True,
                           text=True, timeout=300)
    if setup.returncode != 0:
        skip_or_fail(f"no Docker engine: {setup.stderr.strip()}")
    try:
        docker.require_daemon()
        return docker.docker_cli()
    except Exception as error:  # a PudevError naming the problem
        skip_or_fail(f"no usable Docker engine: {error}")
        raise


# What one e2e module may add to Docker's disk at most (an arm64 build, a podman pull): the benchmark log's
# 2026-12-06 entry on where a run's disk goes.
MODULE_DISK_GB = 25


@pytest.fixture(scope="module", autouse=True)
def room_on_ci(request: pytest.FixtureRequest) -> None:
    """Under CI=true (.ci/run: the machine is CI's), before a module that may start with too little free disk,
    tidy_mid_run. A developer's `make test` never prunes their cache: host-setup's own check stops it instead."""
    if os.environ.get("CI") != "true" or "e2e" not in request.path.parts or shutil.which("docker") is None:
        return
    root = subprocess.run(["docker", "info", "--format", "{{.DockerRootDir}}"], capture_output=True, text=True,
                          check=False, timeout=60).stdout.strip()
    if root and shutil.disk_usage(root).free < MODULE_DISK_GB * 1e9:
        tidy_mid_run()


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
def kept_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealisticRegistry]:
    """One registry per run on storage kept between runs, holding blobs but no image (kept_between_runs.py): the
    release tests push the 7 GB image, and only its changed layers travel."""
    _require_registry()
    registry = RealisticRegistry(tmp_path_factory.mktemp("kept-registry"),
                                 storage=kept_between_runs.kept_storage_dir())
    kept_between_runs.collect_garbage(registry)
    with registry:
        kept_between_runs.forget_images(registry)
        yield registry


@pytest.fixture(scope="session")
def standins(docker_engine: str) -> None:
    run_pudev("standins", timeout=3600, check=True)


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
def profiles(standins: None, report_dir: Path) -> Profiles:
    return Profiles(report_dir)


@pytest.fixture(scope="session")
def local_image(profiles: Profiles) -> LocalImage:
    """The 2024 line's stand-in build, where the behaviour tests run."""
    return profiles.image("local")


@pytest.fixture(scope="session")
def image_suite(profiles: Profiles) -> SuiteRun:
    return profiles.suite("local")


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


# Run last: the module that pushes every platform's build. Its new blobs would otherwise take the disk
# that rootless podman's pull needs (test_podman.py: 2.5x an image free) while that pull runs.
LAST_MODULES = ("test_one_tag_every_platform.py",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.path.name in LAST_MODULES)  # a stable sort: all else keeps its order
