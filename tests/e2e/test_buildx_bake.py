"""`docker buildx bake` on the file `pudev bake` writes for remote or clustered builders, through a real
buildx plugin: the host's own, or Debian sid's that `scripts/host-setup.sh tools` keeps aside for this test
(read through a client configuration of the test's own, so the host's `docker build` stays what it was).

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

from pudev.engine import docker
from pudev.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.slow]
# Where scripts/host-setup.sh keeps sid's plugin (BUILDX_PLUGIN there).
KEPT_PLUGIN = Path("/usr/local/lib/pudev/cli-plugins/docker-buildx")


def _buildx_env(tmp_path: Path) -> tuple[dict[str, str], str]:
    """The environment in which `docker buildx` answers (the host's plugin, else the kept one's folder added to
    a client configuration of the test's own), and the plugin's version."""
    cli = docker.docker_cli()
    env = dict(os.environ)
    probe = subprocess.run([cli, "buildx", "version"], capture_output=True, text=True, env=env, check=False, timeout=60)
    if probe.returncode != 0 and KEPT_PLUGIN.exists():
        config = tmp_path / "docker-config"
        config.mkdir()
        (config / "config.json").write_text(json.dumps({"cliPluginsExtraDirs": [str(KEPT_PLUGIN.parent)]}))
        env["DOCKER_CONFIG"] = str(config)
        probe = subprocess.run([cli, "buildx", "version"], capture_output=True, text=True, env=env, check=False,
                               timeout=60)
    if probe.returncode != 0:
        skip_or_fail(f"no buildx plugin for {cli}: sh scripts/host-setup.sh tools installs one")
    return env, probe.stdout.strip()


def _layers(tag: str) -> list[str]:
    info = docker.inspect_image(tag)
    assert info is not None, f"{tag} is not in the engine"
    return list(info["RootFS"]["Layers"])


def test_bake_builds_the_image_pudev_build_makes(local_image: LocalImage, tmp_path: Path) -> None:
    env, version = _buildx_env(tmp_path)
    cli = docker.docker_cli()
    bake_file = tmp_path / "docker-bake.json"
    wrote = run_pudev("bake", "--profile", "local", "--out", str(bake_file), check=True).stdout
    # The command pudev prints is the one run (buildx refuses to read the CA bundle unless it is allowed).
    told = shlex.split(wrote.rsplit("build it with: ", 1)[1])
    assert told[:3] == ["docker", "buildx", "bake"], wrote
    target = profile_variant("local").name
    assert target in json.loads(bake_file.read_text())["target"]
    tag = f"pudev-bake/pytorch-universal-dev:{target}-{uuid.uuid4().hex[:8]}"
    try:
        baked = subprocess.run([cli, *told[1:], "--set", f"{target}.tags={tag}", "--progress", "plain", target],
                               cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False, timeout=3600)
        assert baked.returncode == 0, f"{version}\n{baked.stderr[-4000:]}"
        assert len(_layers(tag)) == len(_layers(local_image.tag)), f"{version}\n{baked.stderr[-4000:]}"
        diff = run_pudev("manifest", "--diff", local_image.tag, tag, check=True).stdout
        assert "no package or file changed" in diff, diff
    finally:
        subprocess.run([cli, "rmi", "--force", tag], capture_output=True, check=False, timeout=120)
