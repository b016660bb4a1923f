"""A container that is always removed: the one way pudev and its tests run images.

Containers carry the label org.pudev.tracked and are started with --rm, so even
when the engine dies mid-run the daemon drops them when it comes back; any
leftovers from a killed pudev are swept by `sweep()`.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import uuid
from collections.abc import Sequence
from types import TracebackType

from pudev.common.errors import PudevError
from pudev.engine import docker

TRACKED_LABEL = "org.pudev.tracked"


def sweep() -> None:
    """Remove tracked containers left behind by an earlier, killed run."""
    listed = docker.run(["ps", "-aq", "--filter", f"label={TRACKED_LABEL}", "--filter", "status=exited"], check=False)
    ids = listed.stdout.split()
    if ids:
        docker.run(["rm", "-f", *ids], check=False)


class TrackedContainer:
    def __init__(self, image: str, *, purpose: str = "run", options: Sequence[str] = ()) -> None:
        self.image = image
        self.name = f"pudev-{purpose}-{uuid.uuid4().hex[:10]}"
        self.options = list(options)

    def __enter__(self) -> TrackedContainer:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.remove()

    def _run_args(self, command: Sequence[str], *, detach: bool) -> list[str]:
        args = ["run", "--rm", "--name", self.name, "--label", f"{TRACKED_LABEL}=1", *self.options]
        return [*args, "-d", self.image, *command] if detach else [*args, self.image, *command]

    def run_attached(self, command: Sequence[str], *, timeout: float) -> int:
        """Run to completion with output streamed to the terminal; returns the exit code."""
        process = subprocess.Popen(
            [docker.docker_cli(), *self._run_args(command, detach=False)], env=docker.docker_env()
        )
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.remove()
            process.wait()
            raise PudevError(f"{self.image}: `{' '.join(command)}` did not finish within {timeout:.0f} s; "
                             "the container was removed (raise --timeout if the run is just slow)") from None
        except KeyboardInterrupt:
            self.remove()
            process.wait()
            raise PudevError(f"interrupted; container {self.name} was removed", exit_code=130) from None

    def start(self, command: Sequence[str] = ()) -> None:
        docker.run(self._run_args(command, detach=True), timeout=120)

    def exec(self, command: Sequence[str], *, user: str = "", timeout: float = 120,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        args = ["exec"] + (["--user", user] if user else [])
        for key, value in (env or {}).items():
            args += ["--env", f"{key}={value}"]
        return docker.run([*args, self.name, *command], check=False, timeout=timeout)

    def logs(self) -> str:
        result = docker.run(["logs", self.name], check=False)
        return result.stdout + result.stderr

    def inspect(self, template: str) -> str:
        return docker.run(["inspect", "--format", template, self.name], check=False).stdout.strip()

    def wait_for(self, template: str, expected: str, *, timeout: float) -> str:
        """Poll `docker inspect --format TEMPLATE` until it prints `expected`."""
        deadline = time.monotonic() + timeout
        value = ""
        while time.monotonic() < deadline:
            value = self.inspect(template)
            if value == expected:
                return value
            time.sleep(0.5)
        return value

    def remove(self) -> None:
        # If the engine is gone, --rm lets the daemon drop the container when it returns.
        with contextlib.suppress(PudevError):
            docker.run(["rm", "-f", self.name], check=False, timeout=60)
