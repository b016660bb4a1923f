"""Credentials resolved the way the docker CLI resolves them: DOCKER_CONFIG, credHelpers,
credsStore (through real `docker-credential-*` programs on PATH), auths, and the
environment override for CI; every bad input is one line naming its source."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import pytest

from pudev.common.errors import PudevError
from pudev.registry.credentials import resolve

HELPER = """#!/bin/sh
# A docker credential helper: `get` reads the server URL on stdin.
[ "$1" = get ] || exit 2
read -r server
echo "$server" >> "$(dirname "$0")/asked"
case "$server" in
  {known}) printf '{{"ServerURL":"%s","Username":"{user}","Secret":"{secret}"}}\\n' "$server" ;;
  *) echo "credentials not found in native keychain"; exit 1 ;;
esac
"""


@pytest.fixture(autouse=True)
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("PUDEV_REGISTRY_HOST", "PUDEV_REGISTRY_USERNAME", "PUDEV_REGISTRY_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "docker").mkdir()
    return tmp_path / "docker"


def write_config(config_dir: Path, data: object) -> None:
    (config_dir / "config.json").write_text(json.dumps(data))


def install_helper(bin_dir: Path, name: str, known: str, login: tuple[str, str],
                   monkeypatch: pytest.MonkeyPatch) -> Path:
    user, secret = login
    bin_dir.mkdir(exist_ok=True)
    program = bin_dir / f"docker-credential-{name}"
    program.write_text(HELPER.format(known=known, user=user, secret=secret))
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return bin_dir / "asked"


def auth(user: str, secret: str) -> str:
    return base64.b64encode(f"{user}:{secret}".encode()).decode()


def test_no_config_is_anonymous() -> None:
    assert resolve("ghcr.io") is None


def test_auths_by_any_spelling_of_the_host(config_dir: Path) -> None:
    write_config(config_dir, {"auths": {"https://ghcr.io": {"auth": auth("me", "tok:en")}}})
    found = resolve("ghcr.io")
    assert found is not None and (found.username, found.secret) == ("me", "tok:en")
    assert "auths[https://ghcr.io]" in found.source and resolve("quay.io") is None


def test_docker_hub_uses_its_legacy_key(config_dir: Path) -> None:
    write_config(config_dir, {"auths": {"https://index.docker.io/v1/": {"auth": auth("hub", "pw")}}})
    found = resolve("registry-1.docker.io")
    assert found is not None and found.username == "hub"


def test_identity_tokens_are_kept_as_such(config_dir: Path) -> None:
    write_config(config_dir, {"auths": {"ghcr.io": {"identitytoken": "refresh-me"}}})
    found = resolve("ghcr.io")
    assert found is not None and found.is_identity_token and found.secret == "refresh-me"


def test_cred_helpers_win_over_auths(config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = install_helper(tmp_path / "bin", "desk", "ghcr.io", ("helper-user", "helper-secret"), monkeypatch)
    write_config(config_dir, {"credHelpers": {"ghcr.io": "desk"}, "auths": {"ghcr.io": {"auth": auth("a", "b")}}})
    found = resolve("ghcr.io")
    assert found is not None and (found.username, found.secret) == ("helper-user", "helper-secret")
    assert found.source == "docker-credential-desk" and asked.read_text().split() == ["ghcr.io"]


def test_creds_store_serves_every_host_and_not_found_is_anonymous(config_dir: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    install_helper(tmp_path / "bin", "osxkeychain", "ghcr.io", ("store-user", "store-secret"), monkeypatch)
    write_config(config_dir, {"credsStore": "osxkeychain", "auths": {"quay.io": {}}})
    found = resolve("ghcr.io")
    assert found is not None and found.username == "store-user"
    assert resolve("quay.io") is None  # the store has nothing: anonymous, as docker is


def test_a_missing_helper_names_the_config_and_the_fix(config_dir: Path) -> None:
    write_config(config_dir, {"credsStore": "pass-nonexistent"})
    with pytest.raises(PudevError, match=r"config\.json credsStore names the credential helper 'pass-nonexistent', "
                                         r"but docker-credential-pass-nonexistent is not on PATH"):
        resolve("ghcr.io")


def _failing_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "docker-credential-broken"
    program.write_text(f"#!/bin/sh\n{script}\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")


def test_a_broken_helper_is_one_line(config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_helper(tmp_path, monkeypatch, "echo 'keychain locked' >&2\nexit 3")
    write_config(config_dir, {"credHelpers": {"ghcr.io": "broken"}})
    with pytest.raises(PudevError) as caught:
        resolve("ghcr.io")
    message = str(caught.value)
    assert "\n" not in message
    assert "docker-credential-broken get failed for registry ghcr.io with exit status 3" in message
    assert "credHelpers" in message and "docker login ghcr.io" in message
    assert "keychain locked" not in message  # nothing the helper printed


@pytest.mark.parametrize("stream", ["", ">&2"])
def test_what_a_failing_helper_prints_never_reaches_the_message(config_dir: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch, stream: str) -> None:
    """A helper may print the secret it guards when it fails; pudev names the helper, registry and status only."""
    _failing_helper(tmp_path, monkeypatch, f"echo 'Secret: hunter2' {stream}\nexit 1")
    write_config(config_dir, {"credsStore": "broken"})
    with pytest.raises(PudevError) as caught:
        resolve("ghcr.io")
    message = str(caught.value)
    assert "hunter2" not in message and "Secret" not in message and "\n" not in message
    assert "docker-credential-broken get failed for registry ghcr.io with exit status 1" in message


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "\udcff"])
def test_an_unreadable_config_is_one_line(config_dir: Path, text: str) -> None:
    (config_dir / "config.json").write_bytes(text.encode(errors="surrogateescape"))
    with pytest.raises(PudevError, match=r"config\.json \(docker's config.*run `docker login` again"):
        resolve("ghcr.io")


def test_the_environment_override_is_for_its_host_only(config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(config_dir, {"auths": {"ghcr.io": {"auth": auth("file", "x")}}})
    monkeypatch.setenv("PUDEV_REGISTRY_HOST", "ghcr.io")
    monkeypatch.setenv("PUDEV_REGISTRY_USERNAME", "ci")
    monkeypatch.setenv("PUDEV_REGISTRY_PASSWORD", "ci-token")
    found = resolve("ghcr.io")
    assert found is not None and (found.username, found.secret, found.source) == ("ci", "ci-token",
                                                                                  "$PUDEV_REGISTRY_USERNAME")
    assert resolve("registry-1.docker.io") is None  # never sent anywhere else
    monkeypatch.delenv("PUDEV_REGISTRY_HOST")
    with pytest.raises(PudevError, match="go together"):
        resolve("ghcr.io")
