"""A local registry that behaves like GHCR and Docker Hub, built from processes
only (no Docker), everything listening on 127.0.0.1:

- TLS everywhere but the token server (plain HTTP on 127.0.0.1: see its construction), under a CA
  made for the run (`ca_file`; tls_material.py);
- Distribution 2.8 (Debian's docker-registry) with `auth: token`: /v2/ answers
  401 `Bearer realm=...,service=...`; the token server (token_server.py) issues
  scoped JWTs: "pusher" may pull, push and delete, "reader" only pull (its push is
  refused with 401 insufficient_scope), anonymous nothing;
- blob GETs *and HEADs* answered with 307 by the `redirect` storage middleware
  (Distribution routes HEAD to the same ServeBlob). Location is
  `https://localhost:PORT/docker/registry/v2/blobs/sha256/<first 2 hex>/<hex>/data`:
  the baseurl's scheme and host plus the storage driver path; any baseurl path
  is dropped; no query string. The 307 carries no Docker-Content-Digest and,
  for HEAD, no Content-Length: a client learns a blob's size from the storage
  host. Manifests are never redirected;
- the storage host (storage_host.py) serves those paths and refuses any request
  with an Authorization header. It is addressed as "localhost" while the
  registry is "127.0.0.1": real registries redirect to another host name, and
  Go's net/http (dockerd, containerd) keeps Authorization on a redirect to
  another port of the same host name, while requests and curl drop it;
- a proxy in front of Distribution (fault_proxy.py, TLS both ways) whose
  `throttle()` answers chosen requests with 429/503 and Retry-After;
- credentials from a `docker-credential-pudevtest` helper on PATH
  (credential_helper.py); `env()` is what a client process needs.

stop_registry()/start_registry() kill and restart Distribution alone on the same
port and storage (a crash mid-promote); start()/stop() are idempotent."""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from credential_helper import CredentialHelper
from daemon_trust import DaemonTrust
from distribution_process import DistributionProcess, TokenAuth
from fault_proxy import RegistryProxy
from storage_host import StorageHost
from throttle import Throttle
from tls_material import TlsMaterial
from token_server import TokenServer, User
from token_signer import TokenSigner

SERVICE = "pudev-realistic-registry"
ISSUER = "pudev-test-token-server"


class RealisticRegistry:
    def __init__(self, root: Path, *, helper_user: str = "pusher") -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root, self.helper_user = root, helper_user
        # Throwaway passwords, new each run; only the helper's store and the token server hold them.
        self.users = {"pusher": User(secrets.token_urlsafe(12), frozenset({"pull", "push", "delete"})),
                      "reader": User(secrets.token_urlsafe(12), frozenset({"pull"}))}
        self.tls = TlsMaterial.create(root / "tls")
        signer = TokenSigner(root / "tls", issuer=ISSUER, service=SERVICE)
        storage = root / "storage"
        # Plain HTTP on 127.0.0.1, kinder than GHCR's: dockerd on the containerd image store fetches a token with
        # its process's system trust store alone, never certs.d (moby/moby#52361), and this CA is new each run.
        self.token_server = TokenServer(signer, self.users, None, root / "token-server.log")
        self.storage_host = StorageHost(storage, self.tls.server_context(), log=root / "storage-host.log")
        self.distribution = DistributionProcess(
            root, storage=storage, auth=TokenAuth(self.token_server.realm, SERVICE, ISSUER, signer.cert_file),
            redirect=self.storage_host.base_url, cert=self.tls.cert_file, key=self.tls.key_file,
            client=self.tls.client_context())
        self.proxy = RegistryProxy(self.distribution.address, server_tls=self.tls.server_context(),
                                   upstream_tls=self.tls.client_context(), log=root / "proxy.log")
        self.credentials = CredentialHelper(root)
        self.daemon_trust = DaemonTrust(self.tls.ca_file)
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        """host:port of Distribution itself, as image references name it."""
        return self.distribution.address

    @property
    def proxy_address(self) -> str:
        return self.proxy.address

    @property
    def ca_file(self) -> Path:
        return self.tls.ca_file

    @property
    def bin_dir(self) -> Path:
        return self.credentials.bin_dir

    @property
    def docker_config_dir(self) -> Path:
        return self.credentials.docker_config_dir

    def start(self) -> None:
        with self._lock:
            if "127.0.0.1" not in {info[4][0] for info in socket.getaddrinfo("localhost", None, socket.AF_INET)}:
                raise RuntimeError("'localhost' does not resolve to 127.0.0.1 here; the storage host needs it")
            try:
                for part in (self.storage_host, self.token_server, self.distribution, self.proxy):
                    part.start()
                self.credentials.install()
                self.use_credentials(self.helper_user)
            except BaseException:
                self._stop_parts()
                raise

    def stop(self) -> None:
        with self._lock:
            self._stop_parts()

    def _stop_parts(self) -> None:
        for part in (self.proxy, self.distribution, self.token_server, self.storage_host):
            part.stop()
        self.daemon_trust.remove()

    def stop_registry(self) -> None:
        self.distribution.stop()

    def start_registry(self) -> None:
        self.distribution.start()

    def __enter__(self) -> RealisticRegistry:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def password(self, user: str) -> str:
        return self.users[user].password

    def use_credentials(self, user: str) -> None:
        """The helper answers with this user's credentials, for the registry and the proxy."""
        self.helper_user = user
        self.credentials.serve([self.address, self.proxy_address], user, self.password(user))

    def env(self) -> dict[str, str]:
        """What a client process needs: the helper on PATH, DOCKER_CONFIG, the CA for requests/OpenSSL/curl,
        and no HTTP proxy from the environment for these loopback hosts."""
        ca = str(self.ca_file)
        existing = os.environ.get("NO_PROXY") or os.environ.get("no_proxy")
        bypass = "127.0.0.1,localhost" + (f",{existing}" if existing else "")
        return {**self.credentials.env(), "REQUESTS_CA_BUNDLE": ca, "SSL_CERT_FILE": ca, "CURL_CA_BUNDLE": ca,
                "NO_PROXY": bypass, "no_proxy": bypass}

    def throttle(self, count: int, retry_after: int | str = 1, *, status: int = 429,
                 when: Callable[[str, str], bool] | None = None) -> Throttle:
        """The proxy answers the next `count` matching requests with `status` and Retry-After."""
        throttle = Throttle(count, retry_after, status=status, when=when)
        self.proxy.before = throttle
        return throttle

    def token(self, user: str | None, *scopes: str) -> str:
        """A token from the token server, fetched the way a client does (Basic credentials, one scope each)."""
        query = urllib.parse.urlencode([("service", SERVICE), *(("scope", scope) for scope in scopes)])
        request = urllib.request.Request(f"{self.token_server.realm}?{query}")
        if user is not None:
            request.add_unredirected_header("Authorization", _basic(user, self.password(user)))
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),  # never an HTTP proxy from the env
                                             urllib.request.HTTPSHandler(context=self.tls.client_context()))
        with opener.open(request, timeout=10) as answer:
            return str(json.loads(answer.read())["token"])

    def install_daemon_ca(self) -> list[Path]:
        """certs.d entries for the registry and the proxy (needs root); removed by stop(). See daemon_trust.py:
        dockerd does not verify certificates of loopback registries."""
        return self.daemon_trust.install([self.address, self.proxy_address])

    def blob_count(self) -> int:
        return self.distribution.blob_count()


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
