"""`docker buildx bake` on the file `pudev bake` writes for remote or clustered builders, through the engine's
real buildx plugin (scripts/host-setup.sh requires one).

Bake runs on this engine's BuildKit (buildx's docker driver), where `pudev build` made the same variant. Its
RUN steps run again all the same: `pudev build` runs them in the host's network (plan.BUILD_NETWORK), which
is part of each step's cache key, and a bake file leaves the network to the builder. So this is a second
build from the file alone (quick while the package caches are warm), and what must match is what a user
gets: the packages and files (`pudev manifest --diff`), not the layers' digests (file times differ)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import uuid
from pathlib import Path

import pytest
from e2e_support import LocalImage, profile_variant, run_pudev, skip_or_fail
from shards import newest_profile

from pudev.engine import docker
from pudev.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def _buildx_env() -> tuple[dict[str, str], str]:
    """The environment in which `docker buildx` answers, and the plugin's version."""
    cli = docker.docker_cli()
    env = dict(os.environ)
    probe = subprocess.run([cli, "buildx", "version"], capture_output=True, text=True, env=env, check=False, timeout=60)
    if probe.returncode != 0:
        skip_or_fail(f"no buildx plugin for {cli}: install docker-buildx (sh scripts/host-setup.sh engine says so)")
    return env, probe.stdout.strip()


def _layers(tag: str) -> list[str]:
    info = docker.inspect_image(tag)
    assert info is not None, f"{tag} is not in the engine"
    return list(info["RootFS"]["Layers"])


def test_bake_builds_the_image_pudev_build_makes(newest_image: LocalImage, tmp_path: Path) -> None:
    env, version = _buildx_env()
    cli = docker.docker_cli()
    bake_file = tmp_path / "docker-bake.json"
    wrote = run_pudev("bake", "--profile", newest_profile(), "--out", str(bake_file), check=True).stdout
    # The command pudev prints is the one run (buildx refuses to read the CA bundle unless it is allowed).
    told = shlex.split(wrote.rsplit("build it with: ", 1)[1])
    assert told[:3] == ["docker", "buildx", "bake"], wrote
    target = profile_variant(newest_profile()).name
    assert target in json.loads(bake_file.read_text())["target"]
    tag = f"pudev-bake/pytorch-universal-dev:{target}-{uuid.uuid4().hex[:8]}"
    try:
        baked = subprocess.run([cli, *told[1:], "--set", f"{target}.tags={tag}", "--progress", "plain", target],
                               cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False, timeout=3600)
        assert baked.returncode == 0, f"{version}\n{baked.stderr[-4000:]}"
        assert len(_layers(tag)) == len(_layers(newest_image.tag)), f"{version}\n{baked.stderr[-4000:]}"
        diff = run_pudev("manifest", "--diff", newest_image.tag, tag, check=True).stdout
        assert "no package or file changed" in diff, diff
    finally:
        subprocess.run([cli, "rmi", "--force", tag], capture_output=True, check=False, timeout=120)
