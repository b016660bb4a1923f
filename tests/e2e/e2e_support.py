"""Helpers shared by the end-to-end tests."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import kept_between_runs
import pytest
from realistic_registry import RealisticRegistry
from shards import newest_profile

from pudev.building.labels import copy_context
from pudev.common.halves import PLATFORM_SCOPE
from pudev.common.platforms import native_platform
from pudev.config.model import Variant
from pudev.config.profiles import profile_names
from pudev.config.selection import Selection, profile_builds, resolve
from pudev.engine import docker
from pudev.engine.containers import TRACKED_LABEL
from pudev.paths import REPO_ROOT
from pudev.testing import localpasses
from pudev.testing.suite_run import KEPT_CCACHE

PUDEV = [sys.executable, "-m", "pudev.cli"]
# The engine probes health first one interval after the start (the image's 10 s), so a server up in 5 s
# reads healthy at 10 s. Tests that wait for health probe every second instead; the image's own timing is
# what test_clients.py's Compose service waits through.
QUICK_HEALTH = ["--health-interval", "1s"]


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


def skip_or_fail(reason: str) -> None:
    """Skip with the reason; under PUDEV_REQUIRE_ENGINE=1 (.ci/run) or PUDEV_STRICT=1, fail with it instead."""
    if os.environ.get("PUDEV_REQUIRE_ENGINE") == "1" or os.environ.get("PUDEV_STRICT") == "1":
        pytest.fail(f"PUDEV_REQUIRE_ENGINE=1 but {reason}")
    pytest.skip(reason)


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
    return copy_context(tmp_path / "repo")


# A stand-in build is a profile, or a profile on a platform other than this host's: "local-current@linux/arm64".
PLATFORM_MARK = "@"


def split_build(build: str) -> tuple[str, str]:
    """The profile and the platform ('' for the profile's own choice, this host's) of a build's name."""
    profile, _, platform = build.partition(PLATFORM_MARK)
    return profile, platform


def emulated(build: str) -> bool:
    """Whether a stand-in build is for another platform than this host's (it then runs under emulation)."""
    return bool(split_build(build)[1])


def build_args(build: str) -> list[str]:
    """The pudev selection flags of one stand-in build. Under emulation a build can afford its platform
    proof, not its whole CPU half, so it is built requiring that: the label `pudev promote` reads."""
    profile, platform = split_build(build)
    emulated = ["--platform", platform, "--set", f"required_tests={PLATFORM_SCOPE}"] if platform else []
    return ["--profile", profile, *emulated]


def standin_builds() -> list[str]:
    """Every stand-in build: each profile on this host's platform first, then on each other platform its
    variant is built for (under emulation here)."""
    native, foreign = [], []
    for profile in profile_names():
        for build in profile_builds(profile):
            if build.platform == native_platform():
                native.append(profile)
            else:
                foreign.append(f"{profile}{PLATFORM_MARK}{build.platform}")
    return native + foreign


def profile_variant(build: str) -> Variant:
    """The variant a stand-in build makes, with the profile applied, for its platform."""
    profile, platform = split_build(build)
    (variant,) = resolve(Selection(profile=profile, platform=platform)).variants
    return variant


def lock_in(root: Path, profile: str) -> Path:
    """The profile's lock file inside a build-context copy."""
    return root / "requirements/lock" / f"{profile_variant(profile).lock}.txt"


def kept_compile_cache(build: str) -> Path:
    """The compiler cache an emulated build's suite keeps between runs (its cold extension build takes six
    minutes there), one per set of toolkit images: a changed toolkit starts cold, and ccache itself checks
    the compilers' files and every header. That platform's folders for older keys are dropped."""
    variant = profile_variant(build)
    ids = sorted(docker.image_id(toolkit.image) or toolkit.image for toolkit in variant.toolkits)
    key = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]
    root = kept_between_runs.cache_dir() / "suite-ccache"
    folder = root / f"{variant.platform.replace('/', '-')}-{key}"
    for old in root.glob(f"{variant.platform.replace('/', '-')}-*"):
        if old != folder:
            shutil.rmtree(old, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o777)  # the image's user (any uid) writes it
    return folder


def _kept_suite(image_id: str) -> Path:
    """Where a passed suite's report is kept between runs: by image id and by the kernel and engine it ran on,
    so a new kernel or engine runs the suite again."""
    engine = docker.run(["version", "--format", "{{.Server.Version}}"], timeout=60).stdout.strip()
    host = hashlib.sha256(f"{os.uname().release} {engine}".encode()).hexdigest()[:12]
    return kept_between_runs.cache_dir() / "suites" / f"{image_id.removeprefix('sha256:')}-{host}.xml"


class Profiles:
    """Each stand-in profile built once per run, and its in-image suite run once per image id on this machine,
    kernel and engine, when a test first needs it."""

    def __init__(self, reports: Path) -> None:
        self.reports = reports
        self.images: dict[str, LocalImage] = {}
        self.suites: dict[str, SuiteRun] = {}

    def image(self, build: str) -> LocalImage:
        """The stand-in build (a profile, or profile@platform), built once per run from its own stand-ins."""
        if build not in self.images:
            profile, platform = split_build(build)
            run_pudev("standins", "--profile", profile, "--platform", platform or native_platform(), timeout=3600,
                      check=True)  # seconds when they are built already
            result = run_pudev("build", *build_args(build), timeout=5400, check=True)
            tag = next(line.split()[2] for line in result.stdout.splitlines() if line.startswith("pudev: built "))
            image_id = docker.image_id(tag)
            assert image_id is not None
            self.images[build] = LocalImage(tag=tag, image_id=image_id)
        return self.images[build]

    def suite(self, build: str) -> SuiteRun:
        """`pudev test --profile P`: the in-image suite in a fresh container; for another platform's build
        (`--platform X`, under emulation) its platform scope (`--platform-only`)."""
        if build not in self.suites:
            image = self.image(build)
            junit = self.reports / f"image-suite-{build.replace('/', '-')}.xml"
            kept = _kept_suite(image.image_id)
            scope = PLATFORM_SCOPE if emulated(build) else "cpu"
            if kept.exists() and localpasses.recall(image.image_id, scope) is not None:
                # The same image (by id, every byte) passed this scope on this machine, kernel and engine in an
                # earlier run, so that run's report stands, as `pudev test --reuse-local-pass` does: the suite
                # inside is part of the image, so any change to it, or to what it tests, is another id.
                shutil.copyfile(kept, junit)
                self.suites[build] = SuiteRun(returncode=0, junit=junit, output=f"reused the pass of {kept}")
                return self.suites[build]
            flags = ["--platform-only"] if emulated(build) else []
            env = {KEPT_CCACHE: str(kept_compile_cache(build))} if emulated(build) else {}
            result = run_pudev("test", *build_args(build), *flags, "--junit", str(junit), timeout=3600, env=env)
            self.suites[build] = SuiteRun(returncode=result.returncode, junit=junit,
                                          output=result.stdout + result.stderr)
            if result.returncode == 0 and junit.exists():
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(junit, kept)
        return self.suites[build]


@contextmanager
def registry_client(registry: RealisticRegistry) -> Iterator[None]:
    """The engine, pudev and this process reach the registry as a user's machine does: the CA through
    certs.d (the daemon) and the usual CA variables (pudev), the login through the helper. Afterwards no
    name under the throwaway registry stays in the engine (it would keep old images alive next run)."""
    registry.install_daemon_ca()
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in registry.env().items():
                patch.setenv(name, value)
            yield
    finally:
        listed = docker.run(["images", "--digests", "--format", "{{.Repository}} {{.Tag}} {{.Digest}}"]).stdout
        names = [f"{repository}:{tag}" if tag != "<none>" else f"{repository}@{digest}"
                 for repository, tag, digest in (line.split() for line in listed.splitlines())
                 if repository.startswith((registry.address + "/", registry.proxy_address + "/"))]
        if names:
            docker.run(["rmi", *names], check=False)


def push_candidate(registry: RealisticRegistry, *extra: str, profile: str = "") -> tuple[str, str]:
    """`pudev push --profile PROFILE` (inside registry_client; the newest by default): the candidate by digest, and
    its candidate tag."""
    out = run_pudev("push", "--profile", profile or newest_profile(), "--registry", registry.address, *extra,
                    check=True).stdout
    line = next(text for text in out.splitlines() if text.startswith("candidate "))
    return line.split()[1], line.split()[3].rstrip(")")
