"""The token server behind the realistic registry's Bearer challenge, as
auth.docker.io and ghcr.io/token behave: Basic credentials (or none), one or more
`scope` parameters, and a signed token holding only what that user may do. A
pull-only user asking for push gets a pull-only token, so the registry then
refuses the push with 401 insufficient_scope. Each grant is recorded."""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from https_service import HttpsService, LoggingHandler
from token_signer import TOKEN_SECONDS, TokenSigner


@dataclass(frozen=True)
class User:
    password: str
    actions: frozenset[str]  # on every repository, e.g. {"pull", "push"}; "catalog": may list repositories


@dataclass(frozen=True)
class Grant:
    user: str  # "" for an anonymous request
    requested: tuple[str, ...]  # scopes as asked, e.g. "repository:a/b:pull,push"
    granted: tuple[str, ...]  # what the token holds, in the same form


def parse_scope(scope: str) -> tuple[str, str, list[str]] | None:
    """("repository", "a/b", ["pull", "push"]) from "repository:a/b:pull,push"; None if malformed."""
    kind, _, rest = scope.partition(":")
    name, _, actions = rest.rpartition(":")
    return (kind, name, [a for a in actions.split(",") if a]) if kind and name else None


def grant(user: User | None, scopes: list[str]) -> list[dict[str, Any]]:
    access = []
    for scope in scopes:
        parsed = parse_scope(scope)
        if parsed == ("registry", "catalog", ["*"]) and user is not None and "catalog" in user.actions:
            access.append({"type": "registry", "name": "catalog", "actions": ["*"]})
            continue
        if parsed is None or parsed[0] != "repository" or user is None:
            continue  # anonymous requests get nothing, as from a private registry
        kind, name, asked = parsed
        allowed = sorted(user.actions) if "*" in asked else [a for a in asked if a in user.actions]
        if allowed:
            access.append({"type": kind, "name": name, "actions": allowed})
    return access


class TokenServer:
    def __init__(self, signer: TokenSigner, users: Mapping[str, User], context: ssl.SSLContext | None,
                 log: Path | None = None) -> None:
        self.signer, self.users = signer, dict(users)
        self.grants: list[Grant] = []
        self._lock = threading.Lock()
        server = self

        class Handler(LoggingHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server names
                query = parse_qs(urlsplit(self.path).query)
                scopes = [s for value in query.get("scope", []) for s in value.split()]
                user = server.basic_user(self.headers.get("Authorization"))
                self.answer(user, scopes)

            def do_POST(self) -> None:  # noqa: N802 - the OAuth2 form containerd (dockerd) tries first
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                if form.get("grant_type") != ["password"]:
                    # 400 makes containerd fall back to GET with Basic credentials, as it does for ACR.
                    self.reply(400, b'{"error":"unsupported_grant_type"}', {"Content-Type": "application/json"})
                    return
                name, password = form.get("username", [""])[0], form.get("password", [""])[0]
                self.answer(server.check(name, password), form.get("scope", [""])[0].split(), oauth=True)

            def answer(self, who: tuple[str, User | None] | None, scopes: list[str], oauth: bool = False) -> None:
                if who is None:
                    self.reply(401, b'{"details":"incorrect username or password"}',
                               {"Content-Type": "application/json"})
                    return
                name, known = who
                access = grant(known, scopes)
                token = server.signer.sign(name, access)
                with server._lock:
                    server.grants.append(Grant(name, tuple(scopes), tuple(
                        f"{a['type']}:{a['name']}:{','.join(a['actions'])}" for a in access)))
                issued = datetime.datetime.now(datetime.timezone.utc).isoformat()
                body = {"access_token": token, "expires_in": TOKEN_SECONDS, "issued_at": issued}
                if not oauth:
                    body["token"] = token
                self.reply(200, json.dumps(body).encode(), {"Content-Type": "application/json"})

        self.service = HttpsService(Handler, context, log)

    def check(self, name: str, password: str) -> tuple[str, User | None] | None:
        known = self.users.get(name)
        return (name, known) if known is not None and known.password == password else None

    def basic_user(self, header: str | None) -> tuple[str, User | None] | None:
        """(name, user) for good Basic credentials, ("", None) for none at all, None for bad ones."""
        if not header:
            return "", None
        scheme, _, encoded = header.partition(" ")
        try:
            name, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return self.check(name, password) if scheme.lower() == "basic" else None

    @property
    def realm(self) -> str:
        return f"{'https' if self.service.context is not None else 'http'}://{self.service.address}/token"

    def start(self) -> None:
        self.service.start()

    def stop(self) -> None:
        self.service.stop()
