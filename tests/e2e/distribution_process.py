"""Debian's docker-registry (Distribution 2.8) configured like a hosted registry:
HTTPS, `auth: token` against our token server, and the `redirect` storage
middleware sending blob GETs and HEADs to the storage host. Stopping kills the
process (a crash, as far as clients can tell); starting again reuses the same
port, config and storage."""

from __future__ import annotations

import http.client
import secrets
import shutil
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from jupyter_client_lite import free_port

START_SECONDS = 30

CONFIG = """\
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: {storage}
  delete:
    enabled: true
middleware:
  storage:
    - name: redirect
      options:
        baseurl: {redirect}
auth:
  token:
    realm: {realm}
    service: {service}
    issuer: {issuer}
    rootcertbundle: {bundle}
http:
  addr: 127.0.0.1:{port}
  secret: {secret}
  tls:
    certificate: {cert}
    key: {key}
"""


@dataclass(frozen=True)
class TokenAuth:
    realm: str
    service: str
    issuer: str
    rootcertbundle: Path


class DistributionProcess:
    def __init__(self, root: Path, *, storage: Path, auth: TokenAuth, redirect: str, cert: Path, key: Path,
                 client: ssl.SSLContext) -> None:
        self.root, self.storage, self.client = root, storage, client
        self.port = free_port()
        self.config = root / "registry.yml"
        self.log = root / "registry.log"
        # A fixed upload-state secret, as a real deployment has: an upload started before a restart stays valid.
        self.config_text = CONFIG.format(
            storage=self.storage, redirect=redirect, realm=auth.realm, service=auth.service, issuer=auth.issuer,
            bundle=auth.rootcertbundle, port=self.port, secret=secrets.token_hex(16), cert=cert, key=key)
        self.process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        with self._lock:
            if self.process is not None and self.process.poll() is None:
                return
            binary = shutil.which("docker-registry")
            if binary is None:
                raise RuntimeError("docker-registry is not installed (sudo apt-get install docker-registry)")
            self.storage.mkdir(parents=True, exist_ok=True)
            self.config.write_text(self.config_text)
            with self.log.open("ab") as log:
                self.process = subprocess.Popen([binary, "serve", str(self.config)], stdout=log, stderr=log)
            self._wait_until_up(self.process)

    def _wait_until_up(self, process: subprocess.Popen[bytes]) -> None:
        deadline, last = time.monotonic() + START_SECONDS, ""
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"docker-registry exited {process.returncode}:\n{self.log_tail()}")
            connection = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=2, context=self.client)
            try:
                connection.request("GET", "/v2/")
                status = connection.getresponse().status
            except OSError as error:
                last = str(error)
                time.sleep(0.1)
                continue
            finally:
                connection.close()
            if status != 401:  # the token challenge: up, and with auth configured
                raise RuntimeError(f"docker-registry answered /v2/ with {status}, not 401:\n{self.log_tail()}")
            return
        raise RuntimeError(f"docker-registry did not come up on {self.address} in {START_SECONDS} s ({last}):\n"
                           f"{self.log_tail()}")

    def stop(self) -> None:
        with self._lock:
            process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=10)

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""

    def blob_count(self) -> int:
        blobs = self.storage / "docker/registry/v2/blobs"
        return sum(1 for _ in blobs.rglob("data")) if blobs.exists() else 0
