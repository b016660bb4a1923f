"""The user-facing run definitions, exercised by their real clients: the compose
file by Debian's docker-compose (its CPU service must reach healthy), and the
devcontainer by the Dev Containers CLI (a command run through it sees the image's
user, workspace and tools)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from e2e_support import LocalImage
from jupyter_client_lite import JupyterServer, free_port

from pudev.engine import docker
from pudev.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def _client(name: str, hint: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: {hint} (scripts/host-setup.sh installs it)")
    return found


def test_compose_cpu_service_comes_up_healthy(newest_image: LocalImage, tmp_path: Path) -> None:
    compose = _client("docker-compose", "sudo apt-get install docker-compose")
    port, token, project = free_port(), uuid.uuid4().hex, f"pudev-e2e-{uuid.uuid4().hex[:8]}"
    # The project folder compose mounts at /workspace, readable as a cloned project is (pytest's own
    # temporary folders are 0700 for root: Jupyter's language-server search would log a traceback per
    # server it cannot stat there).
    (tmp_path / "project").mkdir(mode=0o755)
    tmp_path.chmod(0o755)
    env = {**os.environ, "PUDEV_IMAGE": newest_image.tag, "JUPYTER_HOST_PORT": str(port), "JUPYTER_TOKEN": token}
    base = [compose, "--project-name", project, "--project-directory", str(tmp_path / "project"), "--file",
            str(REPO_ROOT / "docker-compose.yml")]
    try:
        up = subprocess.run([*base, "up", "--detach", "dev-cpu"], env=env, capture_output=True, text=True,
                            timeout=300, check=False)
        assert up.returncode == 0, up.stderr
        container = subprocess.run([*base, "ps", "-q", "dev-cpu"], env=env, capture_output=True, text=True,
                                   timeout=60, check=True).stdout.strip()
        health = ""
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and health != "healthy":
            health = docker.run(["inspect", "--format", "{{.State.Health.Status}}", container]).stdout.strip()
            time.sleep(1)
        assert health == "healthy", docker.run(["logs", container], check=False).stderr[-2000:]
        binding = docker.run(["port", container, "8888/tcp"]).stdout.split()
        assert binding == [f"127.0.0.1:{port}"]  # loopback only, as the file promises
        server = JupyterServer(port=port, token=token)
        assert server.request("GET", "api/status")[0] == 200
        assert server.request("GET", "api/status", token="wrong")[0] == 403
        docker.run(["logs", container], check=False)  # compose's container: its log meets the log policy
    finally:
        subprocess.run([*base, "down", "--volumes", "--timeout", "5"], env=env, capture_output=True, timeout=300,
                       check=False)


def test_devcontainer_cli_opens_the_image(newest_image: LocalImage, tmp_path: Path) -> None:
    cli = _client("devcontainer", "npm install -g @devcontainers/cli")
    workspace = tmp_path / "project"
    shutil.copytree(REPO_ROOT / ".devcontainer", workspace / ".devcontainer")
    env = {**os.environ, "PUDEV_IMAGE": newest_image.tag}
    common = ["--workspace-folder", str(workspace), "--docker-path", docker.docker_cli()]
    try:
        up = subprocess.run([cli, "up", *common], env=env, capture_output=True, text=True, timeout=600, check=False)
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
        outcome = json.loads(up.stdout.strip().splitlines()[-1])
        assert outcome["outcome"] == "success" and outcome["remoteUser"] == "dev"
        probe = "id -un; pwd; command -v python pip; type -t cuda-switch"  # a function in bash, a file elsewhere
        result = subprocess.run([cli, "exec", *common, "bash", "-lc", probe], env=env, capture_output=True,
                                text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stderr[-2000:]
        lines = result.stdout.split()
        assert lines[:2] == ["dev", "/workspace"], result.stdout
        assert len(lines) == 5 and all(line.startswith("/") for line in lines[2:4]), result.stdout
        assert lines[4] in ("function", "file"), result.stdout
    finally:
        listed = docker.run(["ps", "-aq", "--filter", f"label=devcontainer.local_folder={workspace}"], check=False)
        for container in listed.stdout.split():
            # The CLI builds a vsc-...-uid image on ours to match user ids; it would pin our image.
            derived = docker.run(["inspect", "--format", "{{.Config.Image}}", container], check=False).stdout.strip()
            docker.run(["rm", "-f", container], check=False)
            if derived.startswith("vsc-"):
                docker.run(["rmi", derived], check=False)
