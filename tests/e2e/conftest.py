"""End-to-end tests against a real Docker engine.

The session brings the engine up (scripts/host-setup.sh engine: installs and
starts it when root on Debian/Ubuntu, otherwise says how), builds the stand-ins
and the local profile (cu121 through the production Dockerfile), then tests it.
Without an engine these tests skip with the reason; PUDEV_REQUIRE_ENGINE=1 (set
by .ci/run) turns that skip into a failure.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from e2e_support import LocalImage, SuiteRun, run_pudev

from pudev import engine
from pudev.paths import REPO_ROOT


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("PUDEV_REQUIRE_ENGINE") == "1" or os.environ.get("PUDEV_STRICT") == "1":
        pytest.fail(f"PUDEV_REQUIRE_ENGINE=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_engine() -> str:
    setup = subprocess.run(["sh", str(REPO_ROOT / "scripts/host-setup.sh"), "engine"], check=False, capture_output=True,
                           text=True, timeout=300)
    if setup.returncode != 0:
        _skip_or_fail(f"no Docker engine: {setup.stderr.strip()}")
    try:
        engine.require_daemon()
        return engine.docker_cli()
    except Exception as error:  # a PudevError naming the problem
        _skip_or_fail(f"no usable Docker engine: {error}")
        raise


@pytest.fixture(scope="session")
def standins(docker_engine: str) -> None:
    run_pudev("standins", timeout=3600, check=True)


@pytest.fixture(scope="session")
def local_image(standins: None) -> LocalImage:
    """The local profile built through the production Dockerfile."""
    result = run_pudev("build", "--profile", "local", timeout=5400, check=True)
    tag = next(line.split()[2] for line in result.stdout.splitlines() if line.startswith("pudev: built "))
    image_id = engine.image_id(tag)
    assert image_id is not None
    return LocalImage(tag=tag, image_id=image_id)


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reports")


@pytest.fixture(scope="session")
def image_suite(local_image: LocalImage, report_dir: Path) -> SuiteRun:
    """`pudev test --profile local` once per session: the in-image suite in a fresh container."""
    junit = report_dir / "image-suite.xml"
    result = run_pudev("test", "--profile", "local", "--junit", str(junit), timeout=3600)
    return SuiteRun(returncode=result.returncode, junit=junit, output=result.stdout[-8000:] + result.stderr[-3000:])
