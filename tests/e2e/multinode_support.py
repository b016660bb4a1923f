"""A node of the two-node tests: one container of the built image running `sh -c LINE`, its output read
as it comes, so a test can wait for a line, stop a rank or the node, and bound every wait."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Sequence

from ruamel.yaml import YAML

from pudev.engine import docker
from pudev.engine.containers import TRACKED_LABEL
from pudev.paths import REPO_ROOT

MANIFEST = REPO_ROOT / "examples" / "kubernetes" / "pudev-dist.yaml"


def example_line() -> str:
    """The `pudev dist` line of the Kubernetes example (tests/unit/test_examples.py: Slurm's is the same)."""
    job = next(doc for doc in YAML(typ="safe").load_all(MANIFEST.read_text()) if doc and doc["kind"] == "Job")
    return " ".join(str(job["spec"]["template"]["spec"]["containers"][0]["args"][0]).split())


class Node:
    def __init__(self, name: str, image: str, line: str, env: dict[str, str], options: Sequence[str]) -> None:
        self.name = name
        environment = [item for key, value in env.items() for item in ("--env", f"{key}={value}")]
        self.process = subprocess.Popen(
            [docker.docker_cli(), "run", "--rm", "--name", name, "--label", f"{TRACKED_LABEL}=1", *options,
             *environment, image, "sh", "-c", line],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=docker.docker_env())
        self.out: list[str] = []
        self.err: list[str] = []
        for stream, sink in ((self.process.stdout, self.out), (self.process.stderr, self.err)):
            threading.Thread(target=self._read, args=(stream, sink), daemon=True).start()

    @staticmethod
    def _read(stream: object, sink: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            sink.append(line)

    @property
    def stdout(self) -> str:
        return "".join(self.out)

    @property
    def stderr(self) -> str:
        return "".join(self.err)

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if match := re.search(pattern, self.stderr):
                return match
            if self.process.poll() is not None:
                time.sleep(0.5)  # the last lines may still be on their way
                if match := re.search(pattern, self.stderr):
                    return match
                break
            time.sleep(0.2)
        raise AssertionError(f"{self.name}: no {pattern!r} within {timeout:.0f} s:\n{self.stderr[-3000:]}")

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.name} still runs after {timeout:.0f} s:\n{self.stderr[-3000:]}") from None

    def kill_rank(self, pid: int) -> None:
        docker.run(["exec", self.name, "kill", "-KILL", str(pid)], timeout=60)

    def kill(self) -> None:
        docker.run(["kill", self.name], check=False, timeout=60)

    def remove(self) -> None:
        docker.run(["rm", "-f", self.name], check=False, timeout=60)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=60)
