"""The registry client against a small fake registry: token auth, digests,
tagging by digest, and retries with backoff on transient failures."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.release.registry import DOCKER_HUB, RegistryClient, registry_host, repository_path

MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json"})
DIGEST = "sha256:" + "ab" * 32


class FakeRegistry(BaseHTTPRequestHandler):
    manifests: ClassVar[dict[str, str]] = {}
    failures_left: ClassVar[list[int]] = [0]
    seen_auth: ClassVar[list[str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        if self.path.startswith("/token"):
            self._reply(200, json.dumps({"token": "t0k"}).encode())
            return
        if FakeRegistry.failures_left[0] > 0:
            FakeRegistry.failures_left[0] -= 1
            self._reply(503)
            return
        if self.headers.get("Authorization") != "Bearer t0k":
            realm = f"http://{self.headers['Host']}/token"
            self._reply(401, headers={"WWW-Authenticate": f'Bearer realm="{realm}",service="fake"'})
            return
        FakeRegistry.seen_auth.append(self.headers["Authorization"])
        if self.path == "/v2/":
            self._reply(200)
            return
        repository_and_reference = self.path.removeprefix("/v2/")
        repository, _, reference = repository_and_reference.partition("/manifests/")
        if self.command == "PUT":
            body = self.rfile.read(int(self.headers["Content-Length"]))
            assert body.decode() == MANIFEST
            FakeRegistry.manifests[f"{repository}:{reference}"] = DIGEST
            self._reply(201)
            return
        key = f"{repository}:{reference}" if not reference.startswith("sha256:") else reference
        if key == DIGEST or key in FakeRegistry.manifests:
            self._reply(200, MANIFEST.encode(), {"Docker-Content-Digest": DIGEST,
                                                "Content-Type": "application/vnd.docker.distribution.manifest.v2+json"})
        else:
            self._reply(404)

    do_GET = do_HEAD = do_PUT = _handle  # noqa: N815


@pytest.fixture
def registry() -> Iterator[str]:
    FakeRegistry.manifests = {"team/img:v1": DIGEST}
    FakeRegistry.failures_left = [0]
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeRegistry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_digest_with_token_auth(registry: str) -> None:
    client = RegistryClient(registry, retries=0)
    assert client.digest("team/img", "v1") == DIGEST
    assert client.digest("team/img", "missing") is None


def test_tag_an_existing_digest(registry: str) -> None:
    client = RegistryClient(registry, retries=0)
    client.tag("team/img", DIGEST, "latest")
    assert client.digest("team/img", "latest") == DIGEST


def test_transient_failures_are_retried(registry: str) -> None:
    FakeRegistry.failures_left = [2]
    assert RegistryClient(registry, retries=2, backoff=0.01).digest("team/img", "v1") == DIGEST


def test_persistent_failure_is_one_clear_error(registry: str) -> None:
    FakeRegistry.failures_left = [99]
    with pytest.raises(PudevError, match=r"registry 127\.0\.0\.1:\d+ does not answer \(HTTP 503\) after 2 tries"):
        RegistryClient(registry, retries=1, backoff=0.01).ping()


def test_nothing_listening() -> None:
    with pytest.raises(PudevError, match="does not answer"):
        RegistryClient("127.0.0.1:9", retries=0).ping()


def test_docker_hub_names() -> None:
    ref = parse_image_ref("ubuntu:22.04")
    assert ref is not None and registry_host(ref) == DOCKER_HUB and repository_path(ref) == "library/ubuntu"
    ref = parse_image_ref("pytorch/pytorch:2.5.1-cuda12.1-cudnn9-runtime")
    assert ref is not None and repository_path(ref) == "pytorch/pytorch"
