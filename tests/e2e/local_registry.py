"""A real registry (Debian's docker-registry) on 127.0.0.1, started and stopped by the tests."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from jupyter_client_lite import free_port

CONFIG = """\
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {storage}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:{port}
"""


class LocalRegistry:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.storage = root / "storage"
        self.config = root / "config.yml"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        binary = shutil.which("docker-registry")
        if binary is None:
            raise RuntimeError("docker-registry is not installed (sudo apt-get install docker-registry)")
        self.storage.mkdir(parents=True, exist_ok=True)
        self.config.write_text(CONFIG.format(storage=self.storage, port=self.port))
        log = (self.root / "registry.log").open("ab")
        self.process = subprocess.Popen([binary, "serve", str(self.config)], stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://{self.address}/v2/", timeout=2):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        raise RuntimeError(f"docker-registry did not come up on {self.address}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def blob_count(self) -> int:
        return sum(1 for _ in (self.storage / "docker/registry/v2/blobs").rglob("data")) if self.storage.exists() else 0
