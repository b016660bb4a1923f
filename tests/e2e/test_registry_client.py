"""pudev's registry client against the registry that behaves like GHCR and Docker Hub
(TLS under a test CA, Bearer tokens per scope, blob GETs redirected to a storage host
that refuses Authorization, 429 with Retry-After, a docker-credential helper): every
call the release commands make, without the Docker engine or a 7 GB image."""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Iterator

import certifi
import pytest
from realistic_registry import RealisticRegistry

from pudev.common.errors import PudevError
from pudev.registry import oci
from pudev.registry.client import RegistryClient
from pudev.registry.transport import CA_VARIABLES
from pudev.release import artifacts

SOURCE, RELEASE = "pudev-e2e/client-candidates", "pudev-e2e/client"
PAYLOAD = json.dumps({"result": "passed", "padding": "x" * 300_000}).encode()  # a few chunks


@pytest.fixture(scope="module")
def registry(realistic_registry: RealisticRegistry) -> Iterator[RealisticRegistry]:
    """The client sees the registry the way a user's machine does: the CA through the usual
    variables, credentials through the helper named in DOCKER_CONFIG/config.json."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in realistic_registry.env().items():
            patch.setenv(name, value)
        yield realistic_registry
    realistic_registry.use_credentials("pusher")


@pytest.fixture(scope="module")
def image(registry: RealisticRegistry) -> str:
    """A small image manifest pushed with the client itself: its digest in SOURCE."""
    client = RegistryClient(registry.address, retries=1)
    config = client.upload_blob(SOURCE, b'{"architecture":"amd64","os":"linux"}')
    layer = client.upload_blob(SOURCE, PAYLOAD)
    manifest = {"schemaVersion": 2, "mediaType": oci.OCI_MANIFEST,
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": 37},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer,
                            "size": len(PAYLOAD)}]}
    answer = client.put_manifest(SOURCE, "v1", json.dumps(manifest).encode(), oci.OCI_MANIFEST)
    return answer.headers["Docker-Content-Digest"]


def test_tls_is_verified_against_the_usual_ca_variables(registry: RealisticRegistry,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    RegistryClient(registry.address, retries=0).ping()
    private_ca = next(os.environ[name] for name in CA_VARIABLES if os.environ.get(name))
    for name in CA_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(PudevError, match=r"TLS with registry 127\.0\.0\.1:\d+ failed .*certifi's public bundle .*"
                                         r"point REQUESTS_CA_BUNDLE at a bundle that holds it"):
        RegistryClient(registry.address, retries=0).ping()
    # The private CA where requests does not look first: the message names the bundle that was used, not a
    # variable whose change would do nothing, and no path.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", certifi.where())
    monkeypatch.setenv("SSL_CERT_FILE", private_ca)
    with pytest.raises(PudevError) as refused:
        RegistryClient(registry.address, retries=0).ping()
    message = str(refused.value)
    assert "the bundle $REQUESTS_CA_BUNDLE names" in message and "SSL_CERT_FILE also set, and not read" in message
    assert private_ca not in message and certifi.where() not in message


def test_blobs_are_fetched_through_the_storage_redirect_without_the_token(registry: RealisticRegistry,
                                                                         image: str) -> None:
    client = RegistryClient(registry.address, retries=0)
    body, _ = client.manifest(SOURCE, image)
    layer = json.loads(body)["layers"][0]["digest"]
    seen_before = len(registry.storage_host.requests)
    sink = io.BytesIO()
    assert client.stream_blob(SOURCE, layer, sink) == len(PAYLOAD) and sink.getvalue() == PAYLOAD
    assert client.blob_exists(SOURCE, layer)
    storage = registry.storage_host.requests[seen_before:]
    assert {request.method for request in storage} == {"GET", "HEAD"}, storage
    assert not registry.storage_host.with_authorization()


def test_an_artifact_round_trip_with_a_cross_repository_mount(registry: RealisticRegistry, image: str) -> None:
    client = RegistryClient(registry.address, retries=0)
    digest = artifacts.attach(client, SOURCE, image, artifact_type="application/vnd.pudev.test+json",
                              payload=b'{"ok": true}', annotations={"org.pudev.test": "1"})
    (found,) = artifacts.referrers(client, SOURCE, image, "application/vnd.pudev.test+json")
    assert found.digest == digest and artifacts.payload(client, SOURCE, found) == b'{"ok": true}'
    body, _ = client.manifest(SOURCE, image)
    blobs = [item["digest"] for item in (json.loads(body)["config"], *json.loads(body)["layers"])]
    assert all(client.mount_blob(RELEASE, blob, SOURCE) for blob in blobs)
    client.put_manifest(RELEASE, "latest", body, oci.OCI_MANIFEST)
    assert client.digest(RELEASE, "latest") == image
    mount = next(grant for grant in registry.token_server.grants if len(grant.requested) == 2)
    assert sorted(mount.granted) == sorted(mount.requested), mount  # one token for both repositories


def test_retry_after_is_honoured(registry: RealisticRegistry, image: str) -> None:
    client = RegistryClient(registry.proxy_address, retries=3)
    throttle = registry.throttle(2, retry_after=2, when=lambda method, path: "/manifests/" in path)
    started = time.monotonic()
    assert client.digest(SOURCE, "v1") == image
    assert len(throttle.answered) == 2 and time.monotonic() - started >= 4  # waited as told, twice
    registry.throttle(99, retry_after=1, status=503)
    with pytest.raises(PudevError, match=r"does not answer \(HTTP 503\) after 2 tries"):
        RegistryClient(registry.proxy_address, retries=1).digest(SOURCE, "v1")
    registry.proxy.before = lambda method, path, headers: None


def test_a_pull_only_login_is_refused_a_push_naming_repository_and_scope(registry: RealisticRegistry,
                                                                        image: str) -> None:
    registry.use_credentials("reader")
    try:
        client = RegistryClient(registry.address, retries=0)
        assert client.digest(SOURCE, "v1") == image  # reading works
        with pytest.raises(PudevError) as refused:
            client.tag(SOURCE, image, "v2")
        assert (f"refused pull,push on repository {SOURCE} for the login from docker-credential-pudevtest"
                in str(refused.value)), refused.value
        assert registry.password("reader") not in str(refused.value)
        assert client.digest(SOURCE, "v2") is None
    finally:
        registry.use_credentials("pusher")
    asked = [grant for grant in registry.token_server.grants if grant.user == "reader"]
    assert any("push" in " ".join(grant.requested) and "push" not in " ".join(grant.granted) for grant in asked)
