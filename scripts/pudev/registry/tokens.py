"""The registry's authentication challenge answered: Basic with the credentials, or
a Bearer token from the realm the registry names, asked for exactly the scopes one
call needs (`repository:NAME:pull` or `repository:NAME:pull,push`; a cross-repository
mount needs two). Docker's distribution token spec, with its OAuth2 refresh-token form
for identity tokens."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

import requests

from pudev.common.errors import PudevError
from pudev.registry.credentials import Credentials
from pudev.registry.names import is_loopback

_FIELD = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True)
class Challenge:
    scheme: str  # "bearer" or "basic"
    fields: dict[str, str]

    @property
    def insufficient_scope(self) -> bool:
        return self.fields.get("error") == "insufficient_scope"


def parse_challenge(header: str) -> Challenge | None:
    scheme, _, rest = header.strip().partition(" ")
    if scheme.lower() not in ("bearer", "basic"):
        return None
    return Challenge(scheme.lower(), dict(_FIELD.findall(rest)))


def _realm_is_safe(realm: str) -> bool:
    """Credentials travel to the realm only over TLS, or to this machine."""
    parsed = urllib.parse.urlsplit(realm)
    return parsed.scheme == "https" or (parsed.scheme == "http" and is_loopback(parsed.netloc))


def authorization(challenge: Challenge, *, host: str, scope: str, credentials: Credentials | None,
                  session: requests.Session, verify: str | bool, timeout: float) -> str:
    """The Authorization header value that answers `challenge` for `scope`."""
    if challenge.scheme == "basic":
        if credentials is None:
            raise PudevError(f"{host} wants a login and none was found: run `docker login {host}`")
        return f"Basic {credentials.basic()}"
    realm = challenge.fields.get("realm", "")
    if not realm:
        raise PudevError(f"{host} sent a Bearer challenge without a realm; it is not a registry pudev can talk to")
    if credentials is not None and not _realm_is_safe(realm):
        raise PudevError(f"{host} asks for credentials at {realm}, which is not https; refusing to send them")
    params: list[tuple[str, str]] = [("service", challenge.fields.get("service", ""))]
    params += [("scope", item) for item in scope.split()]
    try:
        if credentials is not None and credentials.is_identity_token:
            answer = session.post(realm, data=[*params, ("grant_type", "refresh_token"), ("client_id", "pudev"),
                                               ("refresh_token", credentials.secret)], verify=verify, timeout=timeout)
        else:
            auth = (credentials.username, credentials.secret) if credentials else None
            answer = session.get(realm, params=params, auth=auth, verify=verify, timeout=timeout)
    except requests.RequestException as error:
        raise PudevError(f"could not get a token for {host} from {realm}: {error}") from None
    if answer.status_code in (401, 403):
        who = f"the credentials from {credentials.source}" if credentials else "an anonymous request"
        raise PudevError(f"{realm} refused {who} for {host} (HTTP {answer.status_code}); check the username and "
                         f"token, or run `docker login {host}` again")
    try:
        answer.raise_for_status()
        data = answer.json()
        token = data.get("token") or data.get("access_token")
    except (requests.RequestException, ValueError, AttributeError):
        token = None
    if not token:
        raise PudevError(f"{realm} gave no token for {host} (HTTP {answer.status_code})")
    return f"Bearer {token}"
