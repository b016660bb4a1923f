"""Helpers shared by the end-to-end tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pudev.config.model import Variant
from pudev.config.selection import Selection, resolve
from pudev.engine import docker
from pudev.engine.containers import TRACKED_LABEL
from pudev.paths import REPO_ROOT

PUDEV = [sys.executable, "-m", "pudev.cli"]


@dataclass(frozen=True)
class LocalImage:
    tag: str
    image_id: str


@dataclass(frozen=True)
class SuiteRun:
    returncode: int
    junit: Path
    output: str


def run_pudev(*args: str, timeout: float = 3600, env: dict[str, str] | None = None,
              check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real CLI as a user would, capturing its output."""
    result = subprocess.run([*PUDEV, *args], check=False, capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, **(env or {})}, cwd=REPO_ROOT)
    if check and result.returncode != 0:
        raise AssertionError(f"pudev {' '.join(args)} exited {result.returncode}:\n{result.stdout[-4000:]}\n"
                             f"{result.stderr[-4000:]}")
    return result


def run_removed(image: str, options: Sequence[str], command: Sequence[str], *, timeout: float = 120,
                purpose: str = "e2e") -> subprocess.CompletedProcess[str]:
    """`docker run --rm` of a tracked container that is removed even when it outlives `timeout`."""
    name = f"pudev-{purpose}-{uuid.uuid4().hex[:10]}"
    try:
        return docker.run(["run", "--rm", "--name", name, "--label", f"{TRACKED_LABEL}=1", *options, image,
                           *command], check=False, timeout=timeout)
    finally:
        docker.run(["rm", "-f", name], check=False, timeout=60)


def build_context_copy(tmp_path: Path) -> Path:
    """What the build context holds, so a test can change its own copy (PUDEV_ROOT=copy)."""
    root = tmp_path / "repo"
    for relative in ("docker", "requirements", "scripts/pudev", "tests/image"):
        shutil.copytree(REPO_ROOT / relative, root / relative, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / ".dockerignore", root / ".dockerignore")
    return root


def profile_variant(profile: str) -> Variant:
    """The variant a stand-in profile builds, with the profile applied."""
    (variant,) = resolve(Selection(profile=profile)).variants
    return variant


def lock_in(root: Path, profile: str) -> Path:
    """The profile's lock file inside a build-context copy."""
    return root / "requirements/lock" / f"{profile_variant(profile).lock}.txt"


class Profiles:
    """Each stand-in profile built once and its in-image suite run once, when a test first needs it."""

    def __init__(self, reports: Path) -> None:
        self.reports = reports
        self.images: dict[str, LocalImage] = {}
        self.suites: dict[str, SuiteRun] = {}

    def image(self, profile: str) -> LocalImage:
        if profile not in self.images:
            result = run_pudev("build", "--profile", profile, timeout=5400, check=True)
            tag = next(line.split()[2] for line in result.stdout.splitlines() if line.startswith("pudev: built "))
            image_id = docker.image_id(tag)
            assert image_id is not None
            self.images[profile] = LocalImage(tag=tag, image_id=image_id)
        return self.images[profile]

    def suite(self, profile: str) -> SuiteRun:
        """`pudev test --profile P`: the in-image suite in a fresh container."""
        if profile not in self.suites:
            self.image(profile)
            junit = self.reports / f"image-suite-{profile}.xml"
            result = run_pudev("test", "--profile", profile, "--junit", str(junit), timeout=3600)
            self.suites[profile] = SuiteRun(returncode=result.returncode, junit=junit,
                                            output=result.stdout + result.stderr)
        return self.suites[profile]
