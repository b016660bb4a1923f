"""Builds on the engine: a BuildKit build whose output streams line by line and
that an interrupt cancels, a plain `docker build` whose output goes to the
terminal, and a root filesystem's tar stream imported as an image."""

from __future__ import annotations

import collections
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TextIO

from pudev.engine import docker


def _stream(process: subprocess.Popen[str], sink: TextIO, kept: collections.deque[str]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        sink.write(line)
        sink.flush()
        kept.append(line)


def _stop(process: subprocess.Popen[str]) -> None:
    """Cancel the build: the client's SIGINT makes BuildKit drop the solve and its containers."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class BuildKitBuild:
    """`docker ARGS` for a BuildKit build. Made before the build starts, it checks that the
    client can run BuildKit builds (so that fails before anything else is done)."""

    def __init__(self, args: Sequence[str]) -> None:
        self.command = [docker.require_buildkit(), *args]

    def run(self, sink: TextIO, kept: collections.deque[str]) -> int:
        """Run it, copying each line of its output to `sink` and into `kept`; returns its exit
        status. An interrupt (KeyboardInterrupt) cancels the build before it propagates."""
        process = subprocess.Popen(
            self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=docker.docker_env(),
            bufsize=1,
        )
        try:
            _stream(process, sink, kept)
            return process.wait()
        finally:
            _stop(process)


def build(args: Sequence[str]) -> int:
    """`docker build ARGS`, its output on the terminal; returns its exit status."""
    return subprocess.run([docker.docker_cli(), "build", *args], env=docker.docker_env(), check=False).returncode


def import_tar(stream: IO[bytes] | None, image: str, *, changes: Sequence[str]) -> None:
    """`docker import` of the tar read from `stream` as `image`, each of `changes` a Dockerfile
    instruction applied to it (`--change`). Raises CalledProcessError when the import fails."""
    options = [option for change in changes for option in ("--change", change)]
    subprocess.run([docker.docker_cli(), "import", *options, "-", image], stdin=stream, check=True,
                   stdout=subprocess.DEVNULL)



def image_from_tar(stream: IO[bytes] | None, image: str, *, changes: Sequence[str], platform: str,
                   scratch: Path) -> None:
    """import_tar for another platform's root filesystem. `docker import --platform` needs an
    experimental daemon (20.10 records the host's platform without one), so this builds
    `FROM scratch` + ADD of the tar with --platform instead; `scratch` holds the tar meanwhile.
    (import_tar itself is left as it is: its code is part of the native OS stand-in's recipe.)"""
    with tempfile.TemporaryDirectory(prefix="import-", dir=scratch) as folder:
        context = Path(folder)
        with open(context / "rootfs.tar", "wb") as tar:
            if stream is not None:
                shutil.copyfileobj(stream, tar)
        (context / "Dockerfile").write_text("\n".join(["FROM scratch", "ADD rootfs.tar /", *changes]) + "\n")
        returncode = build(["--progress=plain", "--platform", platform, "--tag", image, str(context)])
        if returncode != 0:
            raise subprocess.CalledProcessError(returncode, ["docker", "build", "--platform", platform])
