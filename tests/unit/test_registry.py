"""The registry client against a scriptable fake: per-scope token auth, redirects that
never carry the token, Retry-After, streamed and checked blobs, and one clear error for
each way a registry refuses. The e2e suite runs it against Distribution with TLS."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_registry import BLOB, BLOB_DIGEST, MANIFEST_DIGEST, State, fake_registry, login

from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.registry.client import RegistryClient
from pudev.registry.credentials import Credentials
from pudev.registry.names import DOCKER_HUB, is_loopback, registry_host, repository_path
from pudev.registry.tokens import authorization, parse_challenge


@pytest.fixture(autouse=True)
def docker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A login as `pusher` for every test; tests that need another one rewrite it."""
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    for name in ("PUDEV_REGISTRY_HOST", "PUDEV_REGISTRY_USERNAME", "PUDEV_REGISTRY_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path



@pytest.fixture
def registry(docker_config: Path) -> Iterator[tuple[str, State]]:
    with fake_registry() as (address, state):
        login(docker_config, address, "pusher", "s3cret")
        yield address, state


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """urllib3's waits between retries, recorded instead of slept."""
    waited: list[float] = []
    monkeypatch.setattr("urllib3.util.retry.time.sleep", waited.append)
    return waited


def test_digest_manifest_and_tag_with_token_auth(registry: tuple[str, State]) -> None:
    address, state = registry
    client = RegistryClient(address, retries=0)
    assert client.digest("team/img", "v1") == MANIFEST_DIGEST
    assert client.digest("team/img", "missing") is None
    client.tag("team/img", MANIFEST_DIGEST, "latest")
    assert "latest" in state.manifests
    # One token per scope: pull for reading, then pull,push for the tag; each kept and reused.
    assert [scopes for _, scopes in state.token_requests] == [["repository:team/img:pull"],
                                                             ["repository:team/img:pull,push"]]


def test_the_token_never_leaves_the_registry_host(registry: tuple[str, State]) -> None:
    address, state = registry
    client = RegistryClient(address, retries=0)
    assert client.get_blob("team/img", BLOB_DIGEST) == BLOB
    assert client.blob_exists("team/img", BLOB_DIGEST)  # HEAD follows the redirect too
    assert state.storage_seen and all(auth == "" for _, auth in state.storage_seen), state.storage_seen
    assert any(auth.startswith("Bearer ") for _, path, auth in state.registry_seen if "/blobs/" in path)


def test_blobs_stream_in_chunks_and_are_checked_against_their_digest(registry: tuple[str, State]) -> None:
    address, state = registry
    sink = io.BytesIO()
    assert RegistryClient(address, retries=0).stream_blob("team/img", BLOB_DIGEST, sink) == len(BLOB)
    assert sink.getvalue() == BLOB
    with pytest.raises(PudevError, match="is larger than 100 bytes"):
        RegistryClient(address, retries=0).stream_blob("team/img", BLOB_DIGEST, io.BytesIO(), limit=100)
    state.corrupt_blob = True
    with pytest.raises(PudevError, match="does not match its digest"):
        RegistryClient(address, retries=0).get_blob("team/img", BLOB_DIGEST)


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured(registry: tuple[str, State], sleeps: list[float], status: int) -> None:
    address, state = registry
    state.transient = [(status, "7"), (status, "3")]
    assert RegistryClient(address, retries=2, backoff=0.01).digest("team/img", "v1") == MANIFEST_DIGEST
    assert sleeps[:2] == [7.0, 3.0]


def test_a_long_retry_after_is_capped(registry: tuple[str, State], sleeps: list[float]) -> None:
    address, state = registry
    state.transient = [(429, "86400")]
    assert RegistryClient(address, retries=1).digest("team/img", "v1") == MANIFEST_DIGEST
    assert sleeps == [120.0]


def test_transient_failures_are_retried_with_backoff(registry: tuple[str, State], sleeps: list[float]) -> None:
    address, state = registry
    state.transient = [(502, ""), (500, "")]
    assert RegistryClient(address, retries=2, backoff=0.5).digest("team/img", "v1") == MANIFEST_DIGEST
    assert len(state.registry_seen) >= 3 and sleeps and all(wait >= 0 for wait in sleeps)


def test_persistent_failure_is_one_clear_error(registry: tuple[str, State], sleeps: list[float]) -> None:
    address, state = registry
    state.transient = [(503, "")] * 99
    with pytest.raises(PudevError, match=r"registry 127\.0\.0\.1:\d+ does not answer \(HTTP 503\) after 2 tries"):
        RegistryClient(address, retries=1, backoff=0.01).ping()


def test_nothing_listening() -> None:
    with pytest.raises(PudevError, match="does not answer"):
        RegistryClient("127.0.0.1:9", retries=0).ping()


def test_a_pull_only_login_is_refused_a_push_with_the_repository_and_scope(
        registry: tuple[str, State], docker_config: Path) -> None:
    address, state = registry
    login(docker_config, address, "reader", "r3ad")
    client = RegistryClient(address, retries=0)
    assert client.digest("team/img", "v1") == MANIFEST_DIGEST  # pull works
    with pytest.raises(PudevError) as refused:
        client.tag("team/img", MANIFEST_DIGEST, "latest")
    message = str(refused.value)
    assert "refused pull,push on repository team/img" in message and "auths[" in message
    assert "write:packages" in message and "latest" not in state.manifests


def test_an_identity_token_is_exchanged_through_the_refresh_grant(registry: tuple[str, State],
                                                                 docker_config: Path) -> None:
    address, state = registry
    (docker_config / "config.json").write_text(json.dumps({"auths": {address: {"identitytoken": "refresh-pusher"}}}))
    client = RegistryClient(address, retries=0)
    client.tag("team/img", MANIFEST_DIGEST, "latest")  # push works: the refresh token stood for pusher
    assert "latest" in state.manifests and [user for user, _ in state.token_requests] == ["pusher", "pusher"]


def test_anonymous_is_refused_with_how_to_log_in(registry: tuple[str, State], docker_config: Path) -> None:
    address, _ = registry
    (docker_config / "config.json").unlink()
    with pytest.raises(PudevError, match=r"refused pull on repository team/img for an anonymous request .*"
                                         r"docker login 127\.0\.0\.1"):
        RegistryClient(address, retries=0).digest("team/img", "v1")


def test_wrong_credentials_are_named_without_the_secret(registry: tuple[str, State], docker_config: Path) -> None:
    address, _ = registry
    login(docker_config, address, "pusher", "wrong-password")
    with pytest.raises(PudevError) as refused:
        RegistryClient(address, retries=0).digest("team/img", "v1")
    assert "refused the credentials from" in str(refused.value) and "wrong-password" not in str(refused.value)


def test_credentials_never_go_to_a_plain_http_realm_elsewhere() -> None:
    challenge = parse_challenge('Bearer realm="http://auth.example.invalid/token",service="x"')
    assert challenge is not None
    import requests
    with pytest.raises(PudevError, match="not https; refusing to send them"):
        authorization(challenge, host="registry.example.invalid", scope="repository:a:pull",
                      credentials=Credentials("u", "p", "test"), session=requests.Session(), verify=True, timeout=1)


def test_a_missing_ca_file_names_its_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "nope.pem"))
    with pytest.raises(PudevError, match=r"REQUESTS_CA_BUNDLE=.*nope\.pem \(environment\): no such CA file"):
        RegistryClient("127.0.0.1:9")


def test_names() -> None:
    ref = parse_image_ref("ubuntu:22.04")
    assert ref is not None and registry_host(ref) == DOCKER_HUB and repository_path(ref) == "library/ubuntu"
    ref = parse_image_ref("pytorch/pytorch:2.5.1-cuda12.1-cudnn9-runtime")
    assert ref is not None and repository_path(ref) == "pytorch/pytorch"
    assert is_loopback("127.0.0.1:5000") and is_loopback("localhost:1") and is_loopback("[::1]:5000")
    assert not is_loopback("ghcr.io") and not is_loopback("10.0.0.1:5000")
