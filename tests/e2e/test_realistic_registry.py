"""The realistic registry itself behaves like GHCR and Docker Hub, proved with
plain `requests` calls: TLS under the test CA, the Bearer token flow and its
scopes, blob redirects to a storage host that refuses the token, 429 with
Retry-After, credentials from a docker-credential helper, and a restart that
keeps storage. No Docker engine: only docker-registry and Python."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from daemon_trust import DaemonTrust
from realistic_registry import SERVICE, RealisticRegistry
from token_signer import decode_claims

REPO, OTHER = "pudev-test/harness", "pudev-test/other"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"


@pytest.fixture(scope="module")
def registry(realistic_registry: RealisticRegistry) -> Iterator[RealisticRegistry]:
    yield realistic_registry
    realistic_registry.stop()
    realistic_registry.stop()  # a second stop does nothing


@pytest.fixture(scope="module")
def web(registry: RealisticRegistry) -> Iterator[requests.Session]:
    """Trusts the test CA and nothing from the environment (a REQUESTS_CA_BUNDLE or proxy there would win)."""
    with requests.Session() as session:
        session.trust_env, session.verify = False, str(registry.ca_file)
        yield session


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _push_blob(web: requests.Session, registry: RealisticRegistry, token: str, data: bytes) -> str:
    """POST then one PUT: a monolithic upload."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    started = web.post(f"https://{registry.address}/v2/{REPO}/blobs/uploads/", headers=_bearer(token), timeout=10)
    assert started.status_code == 202, started.text
    done = web.put(started.headers["Location"], params={"digest": digest}, data=data, timeout=10,
                   headers={**_bearer(token), "Content-Type": "application/octet-stream"})
    assert done.status_code == 201, done.text
    return digest


@pytest.fixture(scope="module")
def pushed(web: requests.Session, registry: RealisticRegistry) -> tuple[str, bytes]:
    """A blob and an OCI manifest pushed by `pusher`: (blob digest, blob bytes)."""
    token = registry.token("pusher", f"repository:{REPO}:pull,push")
    data = b"realistic registry layer\n" * 1000
    layer, config = _push_blob(web, registry, token, data), _push_blob(web, registry, token, b"{}")
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST_TYPE,
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": 2},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer,
                            "size": len(data)}]}
    put = web.put(f"https://{registry.address}/v2/{REPO}/manifests/v1", data=json.dumps(manifest), timeout=10,
                  headers={**_bearer(token), "Content-Type": MANIFEST_TYPE})
    assert put.status_code == 201, put.text
    return layer, data


def test_tls_needs_the_test_ca(web: requests.Session, registry: RealisticRegistry) -> None:
    with requests.Session() as plain, pytest.raises(requests.exceptions.SSLError):
        plain.trust_env = False
        plain.get(f"https://{registry.address}/v2/", timeout=10)  # certifi's roots only
    assert web.get(f"https://{registry.address}/v2/", timeout=10).status_code == 401


def test_v2_answers_a_bearer_challenge(web: requests.Session, registry: RealisticRegistry) -> None:
    answer = web.get(f"https://{registry.address}/v2/", timeout=10)
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == f'Bearer realm="{registry.token_server.realm}",service="{SERVICE}"'
    token = registry.token("reader")
    assert web.get(f"https://{registry.address}/v2/", headers=_bearer(token), timeout=10).status_code == 200


def test_the_token_server_checks_credentials(web: requests.Session, registry: RealisticRegistry) -> None:
    scope = f"repository:{REPO}:pull"
    bad = web.get(registry.token_server.realm, params={"service": SERVICE, "scope": scope},
                  auth=("pusher", "wrong"), timeout=10)
    assert bad.status_code == 401
    assert decode_claims(registry.token(None, scope))["access"] == []  # anonymous: a token for nothing
    # The OAuth2 form containerd (dockerd's image store) tries first.
    form = web.post(registry.token_server.realm, timeout=10, data={
        "grant_type": "password", "username": "reader", "password": registry.password("reader"),
        "service": SERVICE, "scope": scope, "client_id": "containerd-client"})
    assert form.status_code == 200
    assert decode_claims(form.json()["access_token"])["access"][0]["actions"] == ["pull"]


def test_pusher_pushes_and_pulls(web: requests.Session, registry: RealisticRegistry,
                                 pushed: tuple[str, bytes]) -> None:
    token = registry.token("pusher", f"repository:{REPO}:pull")
    answer = web.get(f"https://{registry.address}/v2/{REPO}/manifests/v1", timeout=10,
                     headers={**_bearer(token), "Accept": MANIFEST_TYPE})
    assert answer.status_code == 200 and pushed[0] in answer.text


def test_a_pull_only_token_cannot_push(web: requests.Session, registry: RealisticRegistry) -> None:
    token = registry.token("reader", f"repository:{REPO}:pull,push")
    assert decode_claims(token)["access"] == [{"type": "repository", "name": REPO, "actions": ["pull"]}]
    assert registry.token_server.grants[-1].user == "reader"
    assert registry.token_server.grants[-1].granted == (f"repository:{REPO}:pull",)
    answer = web.post(f"https://{registry.address}/v2/{REPO}/blobs/uploads/", headers=_bearer(token), timeout=10)
    assert answer.status_code == 401
    challenge = answer.headers["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge
    scope = re.search(r'scope="([^"]+)"', challenge)
    assert scope is not None and scope.group(1).startswith(f"repository:{REPO}:")
    assert set(scope.group(1).rsplit(":", 1)[1].split(",")) == {"pull", "push"}  # in Go's map order


def test_a_mount_asks_for_two_scopes(web: requests.Session, registry: RealisticRegistry,
                                     pushed: tuple[str, bytes]) -> None:
    digest = pushed[0]
    token = registry.token("pusher", f"repository:{OTHER}:pull,push", f"repository:{REPO}:pull")
    assert registry.token_server.grants[-1].granted == (f"repository:{OTHER}:pull,push", f"repository:{REPO}:pull")
    mounted = web.post(f"https://{registry.address}/v2/{OTHER}/blobs/uploads/", timeout=10,
                       params={"mount": digest, "from": REPO}, headers=_bearer(token))
    assert mounted.status_code == 201 and mounted.headers["Docker-Content-Digest"] == digest


def test_blob_reads_go_to_a_storage_host_that_refuses_the_token(web: requests.Session, registry: RealisticRegistry,
                                                                pushed: tuple[str, bytes]) -> None:
    digest, data = pushed
    token = registry.token("reader", f"repository:{REPO}:pull")
    blob = f"https://{registry.address}/v2/{REPO}/blobs/{digest}"
    hex_digest = digest.split(":")[1]
    expected = f"{registry.storage_host.base_url}/docker/registry/v2/blobs/sha256/{hex_digest[:2]}/{hex_digest}/data"
    for method in ("GET", "HEAD"):  # Distribution redirects both
        answer = web.request(method, blob, headers=_bearer(token), allow_redirects=False, timeout=10)
        assert answer.status_code == 307 and answer.headers["Location"] == expected, (method, answer.headers)
    refused = web.get(expected, headers=_bearer(token), timeout=10)
    assert refused.status_code == 400 and b"Authorization" in refused.content
    fetched = web.get(expected, timeout=10)
    assert fetched.status_code == 200 and "sha256:" + hashlib.sha256(fetched.content).hexdigest() == digest
    # requests drops Authorization when a redirect changes host, as a client must.
    followed = web.get(blob, headers=_bearer(token), timeout=10)
    assert followed.status_code == 200 and followed.content == data and followed.url == expected
    carried = registry.storage_host.with_authorization()
    assert [(seen.method, seen.status) for seen in carried] == [("GET", 400)]  # only the deliberate one


def test_the_proxy_throttles_with_retry_after(web: requests.Session, registry: RealisticRegistry) -> None:
    throttle = registry.throttle(2, retry_after=3, when=lambda method, path: path.startswith("/v2/"))
    through = f"https://{registry.proxy_address}/v2/"
    answers = [web.get(through, timeout=10) for _ in range(3)]
    assert [a.status_code for a in answers] == [429, 429, 401]  # then the registry's own challenge
    assert answers[0].headers["Retry-After"] == "3"
    assert answers[0].json()["errors"][0]["code"] == "TOOMANYREQUESTS"
    assert throttle.answered == [("GET", "/v2/", 429), ("GET", "/v2/", 429)]
    assert registry.proxy.requests[-3:] == [("GET", "/v2/", 429), ("GET", "/v2/", 429), ("GET", "/v2/", 401)]


def test_the_proxy_relays_a_streamed_upload(web: requests.Session, registry: RealisticRegistry,
                                            pushed: tuple[str, bytes]) -> None:
    token = registry.token("pusher", f"repository:{REPO}:pull,push")
    data = b"streamed through the proxy\n" * 500
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    started = web.post(f"https://{registry.proxy_address}/v2/{REPO}/blobs/uploads/", headers=_bearer(token),
                       timeout=10)
    # The registry builds the upload Location from the Host the client used: the proxy's.
    assert started.status_code == 202 and started.headers["Location"].startswith(f"https://{registry.proxy_address}/")
    chunks = (data[i:i + 4096] for i in range(0, len(data), 4096))  # a generator: Transfer-Encoding: chunked
    done = web.put(started.headers["Location"], params={"digest": digest}, data=chunks, headers=_bearer(token),
                   timeout=10)
    assert done.status_code == 201, done.text
    head = web.head(f"https://{registry.proxy_address}/v2/{REPO}/manifests/v1", timeout=10,
                    headers={**_bearer(token), "Accept": MANIFEST_TYPE})
    assert head.status_code == 200 and int(head.headers["Content-Length"]) > 0  # a HEAD keeps the real length


def _helper(registry: RealisticRegistry, server: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker-credential-pudevtest", "get"], input=server, capture_output=True, text=True,
                          env={**os.environ, **registry.env()}, timeout=30, check=False)


def test_the_credential_helper_serves_its_servers_only(registry: RealisticRegistry) -> None:
    config = json.loads((registry.docker_config_dir / "config.json").read_text())
    assert config == {"credHelpers": {registry.address: "pudevtest", registry.proxy_address: "pudevtest"}}
    assert registry.env()["DOCKER_CONFIG"] == str(registry.docker_config_dir)
    assert registry.env()["PATH"].startswith(f"{registry.bin_dir}{os.pathsep}")
    answer = _helper(registry, registry.address)
    assert answer.returncode == 0
    assert json.loads(answer.stdout) == {"ServerURL": registry.address, "Username": "pusher",
                                         "Secret": registry.password("pusher")}
    unknown = _helper(registry, "127.0.0.1:1")
    assert unknown.returncode == 1 and unknown.stdout.strip() == "credentials not found in native keychain"
    registry.use_credentials("reader")
    try:
        assert json.loads(_helper(registry, f"https://{registry.proxy_address}").stdout)["Username"] == "reader"
    finally:
        registry.use_credentials("pusher")
    assert ("get", registry.address) in registry.credentials.calls()


def test_a_restart_keeps_storage(web: requests.Session, registry: RealisticRegistry,
                                 pushed: tuple[str, bytes]) -> None:
    token = registry.token("reader", f"repository:{REPO}:pull")
    blobs = registry.blob_count()
    registry.stop_registry()
    registry.stop_registry()  # idempotent
    with pytest.raises(requests.exceptions.ConnectionError):
        web.get(f"https://{registry.address}/v2/", timeout=5)
    assert web.get(f"https://{registry.proxy_address}/v2/", timeout=10).status_code == 502  # the proxy says so
    registry.start_registry()
    registry.start_registry()
    answer = web.head(f"https://{registry.address}/v2/{REPO}/blobs/{pushed[0]}", headers=_bearer(token),
                      allow_redirects=False, timeout=10)
    assert answer.status_code == 307 and registry.blob_count() == blobs


def test_daemon_trust_installs_and_removes_the_ca(registry: RealisticRegistry, tmp_path: Path) -> None:
    trust = DaemonTrust(registry.ca_file, certs_d=tmp_path / "certs.d")  # /etc/docker/certs.d in real use
    installed = trust.install([registry.address, registry.proxy_address])
    assert [path.name for path in installed] == [registry.address, registry.proxy_address]
    assert (installed[0] / "ca.crt").read_bytes() == registry.ca_file.read_bytes()
    trust.remove()
    assert not any((tmp_path / "certs.d").iterdir())
