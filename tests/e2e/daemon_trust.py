"""The Docker daemon's trust in the test CA: /etc/docker/certs.d/HOST:PORT/ca.crt.

What dockerd actually does for a registry on 127.0.0.1 (moby master, read for
this harness): the CA file is written, but for a loopback address it is not what
makes the connection work, and dockerd does not verify the certificate at all:

- Classic image store (daemon/pkg/registry): `loadInsecureRegistries` always
  appends "127.0.0.0/8" and "::1/128" to the insecure registries, so
  `isSecureIndex` is false; `newTLSConfig` then sets InsecureSkipVerify and
  never reads certs.d (it loads that directory only for secure registries).
  The endpoints are https (unverified), then http as a fallback.
- containerd image store (daemon/hosts.go, containerd's ConfigureHosts with
  certs.d as its host directory): a loopback host on a port other than 443
  gets scheme http with skip_verify set, which counts as TLS configuration, so
  HTTPS is tried first (with an HTTP fallback) and the certificate is not
  verified; a ca.crt here is added to the pool but cannot make verification
  stricter. With `insecure-registries` or mirrors in daemon.json,
  mergeLegacyConfig also sets InsecureSkipVerify for loopback.

So a daemon test against this registry proves the token, scope and redirect
behaviour, not certificate verification; pudev's own client must verify
(REQUESTS_CA_BUNDLE), and test_realistic_registry proves the CA is needed.
Writing under /etc/docker needs root; install() says so otherwise."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterable
from pathlib import Path

CERTS_D = Path("/etc/docker/certs.d")


class DaemonTrust:
    def __init__(self, ca_file: Path, certs_d: Path = CERTS_D) -> None:
        self.ca_file, self.certs_d = ca_file, certs_d
        self.installed: list[Path] = []

    def install(self, addresses: Iterable[str]) -> list[Path]:
        """certs.d/ADDRESS/ca.crt for each host:port; returns the directories it created."""
        for address in addresses:
            directory = self.certs_d / address
            if directory in self.installed:
                continue
            try:
                directory.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(self.ca_file, directory / "ca.crt")
            except PermissionError as error:
                raise RuntimeError(f"cannot write {directory}/ca.crt (run as root): {error}") from error
            self.installed.append(directory)
        return list(self.installed)

    def remove(self) -> None:
        for directory in self.installed:
            (directory / "ca.crt").unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                directory.rmdir()  # only if nothing else was put there
        self.installed.clear()
