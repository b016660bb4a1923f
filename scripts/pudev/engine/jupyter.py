"""`pudev jupyter`: JupyterLab on an image this engine has, with the quick start's `docker run`
(docs/quickstart.md): GPUs where the host has them, room in /dev/shm for DataLoader workers, the
port on 127.0.0.1 only, the current folder as /workspace, the host user's ids, and --rm."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.engine import docker

CONTAINER_PORT = 8888
SHM_SIZE = "8g"  # Docker's default /dev/shm is 64 MB: DataLoader workers die passing batches through it


def run_options(*, gpus: bool, port: int, workspace: Path, uid: int, gid: int, terminal: bool) -> list[str]:
    """The flags, in the quick start's order; a test holds the page's command to them."""
    return ["--rm", *(["-it"] if terminal else []), *(["--gpus", "all"] if gpus else []), f"--shm-size={SHM_SIZE}",
            "-p", f"127.0.0.1:{port}:{CONTAINER_PORT}", "-v", f"{workspace}:/workspace",
            # The entrypoint gives `dev` these ids and drops root: files in /workspace stay the host user's.
            "-u", "root", "-e", f"PUDEV_UID={uid}", "-e", f"PUDEV_GID={gid}"]


def run_jupyter(image: str, *, port: int, workspace: Path, build_hint: str) -> None:
    """Replace this process with the engine's client running JupyterLab (Ctrl-C stops and removes it)."""
    if not 1 <= port <= 65535:
        raise PudevError(f"--port {port}: not a TCP port; use a number from 1 to 65535, such as 8888")
    try:
        usable = workspace.is_dir() and os.access(workspace, os.R_OK | os.X_OK)
    except OSError:  # a folder above it this user may not enter
        usable = False
    if not usable:
        raise PudevError(f"--workspace {workspace}: not a folder you can open; name one (default: this folder)")
    docker.require_daemon()  # an engine that is down says so, not "no image"
    if docker.inspect_image(image) is None:
        raise PudevError(f"no image {image} on this engine: {build_hint}")
    # The token travels in the client's environment (`-e JUPYTER_TOKEN` takes it from there), never in argv,
    # which other users of this machine can read; the address printed here is then complete.
    token = secrets.token_urlsafe(24)
    argv = [docker.docker_cli(), "run", *run_options(
        gpus=docker.has_gpu_runtime(), port=port, workspace=workspace.resolve(), uid=os.getuid(), gid=os.getgid(),
        terminal=sys.stdin.isatty() and sys.stdout.isatty()), "-e", "JUPYTER_TOKEN", image]
    print(f"pudev: JupyterLab from {image}: open http://127.0.0.1:{port}/lab?token={token} (Ctrl-C stops it)",
          file=sys.stderr, flush=True)
    os.execvpe(argv[0], argv, {**docker.docker_env(), "JUPYTER_TOKEN": token})
