"""Registry credentials, resolved the way the docker CLI resolves them:

1. PUDEV_REGISTRY_HOST + PUDEV_REGISTRY_USERNAME + PUDEV_REGISTRY_PASSWORD (CI without
   `docker login`; only ever sent to that host);
2. in $DOCKER_CONFIG/config.json (default ~/.docker): `credHelpers[host]`, else
   `credsStore` (both through the `docker-credential-NAME get` protocol), else `auths`.

A helper that says "credentials not found" means anonymous, as it does for docker.
Secrets are never printed; errors name where the credentials came from.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pudev.common.errors import PudevError
from pudev.registry.names import DOCKER_HUB, DOCKER_HUB_KEYS, config_key_host

ENV_HOST, ENV_USERNAME, ENV_PASSWORD = "PUDEV_REGISTRY_HOST", "PUDEV_REGISTRY_USERNAME", "PUDEV_REGISTRY_PASSWORD"
IDENTITY_TOKEN_USER = "<token>"  # docker's marker: the secret is an OAuth2 refresh token
HELPER_TIMEOUT = 60


@dataclass(frozen=True)
class Credentials:
    username: str
    secret: str
    source: str  # where they came from, for messages; never the secret

    @property
    def is_identity_token(self) -> bool:
        return self.username == IDENTITY_TOKEN_USER

    def basic(self) -> str:
        return base64.b64encode(f"{self.username}:{self.secret}".encode()).decode()


def config_path() -> Path:
    return Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker") / "config.json"


def _server_keys(host: str) -> tuple[str, ...]:
    return DOCKER_HUB_KEYS if host == DOCKER_HUB else (host,)


def _from_environment(host: str) -> Credentials | None:
    username, password, only = (os.environ.get(name, "") for name in (ENV_USERNAME, ENV_PASSWORD, ENV_HOST))
    if not (username or password):
        return None
    if not (username and password and only):
        raise PudevError(f"{ENV_HOST}, {ENV_USERNAME} and {ENV_PASSWORD} go together (environment): set all three, "
                         "or none to use docker's config.json")
    return Credentials(username, password, f"${ENV_USERNAME}") if config_key_host(only) == host else None


def _read_config(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise PudevError(f"{path} (docker's config, from DOCKER_CONFIG or ~/.docker): unreadable ({error}); "
                         "fix the file or run `docker login` again") from None
    if not isinstance(data, dict):
        raise PudevError(f"{path} (docker's config): not a JSON object; fix the file or run `docker login` again")
    return data


def run_helper(name: str, server: str, origin: str) -> Credentials | None:
    """`docker-credential-NAME get` with the server on stdin; None when it has nothing for it."""
    program = f"docker-credential-{name}"
    if shutil.which(program) is None:
        raise PudevError(f"{origin} names the credential helper '{name}', but {program} is not on PATH; install it, "
                         "or remove it from config.json and run `docker login` again")
    try:
        answer = subprocess.run([program, "get"], input=server, capture_output=True, text=True, check=False,
                                timeout=HELPER_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise PudevError(f"{program} get did not answer within {HELPER_TIMEOUT} s (from {origin}); "
                         "unlock the keychain it uses and retry") from None
    if answer.returncode != 0:
        if "credentials not found" in (answer.stdout + answer.stderr).lower():
            return None
        # Nothing the helper printed is repeated: a failing helper may print the very secret it guards.
        raise PudevError(f"{program} get failed for registry {server} with exit status {answer.returncode} "
                         f"(from {origin}); what it printed is not shown, as it may hold a secret: check the helper "
                         f"(a locked keychain?) or run `docker login {server}` again")
    try:
        data = json.loads(answer.stdout)
        return Credentials(str(data["Username"]), str(data["Secret"]), program)
    except (ValueError, KeyError, TypeError):
        raise PudevError(f"{program} get answered something that is not docker's credential JSON "
                         f"(from {origin})") from None


def _from_auths(auths: dict[str, Any], host: str, path: Path) -> Credentials | None:
    wanted = {config_key_host(key) for key in _server_keys(host)}
    for key, entry in auths.items():
        if config_key_host(key) not in wanted or not isinstance(entry, dict):
            continue
        origin = f"{path} auths[{key}]"
        if entry.get("identitytoken"):
            return Credentials(IDENTITY_TOKEN_USER, str(entry["identitytoken"]), origin)
        if entry.get("auth"):
            try:
                username, _, secret = base64.b64decode(str(entry["auth"])).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                raise PudevError(f"{origin}: 'auth' is not base64 user:password; run `docker login {key}` "
                                 "again") from None
            return Credentials(username, secret, origin)
        if entry.get("username") and entry.get("password"):
            return Credentials(str(entry["username"]), str(entry["password"]), origin)
    return None


def resolve(host: str) -> Credentials | None:
    """The credentials docker would send to `host`, or None (anonymous)."""
    from_environment = _from_environment(host)
    if from_environment is not None:
        return from_environment
    path = config_path()
    config = _read_config(path)
    helpers = config.get("credHelpers") or {}
    for key in _server_keys(host):
        for configured, helper in helpers.items():
            if config_key_host(configured) == config_key_host(key):
                return run_helper(str(helper), configured, f"{path} credHelpers")
    if config.get("credsStore"):
        return run_helper(str(config["credsStore"]), _server_keys(host)[0], f"{path} credsStore")
    return _from_auths(config.get("auths") or {}, host, path)
