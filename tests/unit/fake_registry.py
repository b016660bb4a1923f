"""A scriptable registry for the client's unit tests, on 127.0.0.1 over plain HTTP:
token auth with per-scope grants, blob GETs redirected to a second host (a storage
host that refuses Authorization), and queued transient answers (429/503 with
Retry-After). The e2e suite runs the same client against Distribution itself."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BLOB = b"layer bytes " * 1000
BLOB_DIGEST = "sha256:" + hashlib.sha256(BLOB).hexdigest()
MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json"}).encode()
MANIFEST_DIGEST = "sha256:" + hashlib.sha256(MANIFEST).hexdigest()
USERS = {"pusher": ("s3cret", "pull,push"), "reader": ("r3ad", "pull")}
REFRESH_TOKENS = {"refresh-pusher": "pusher"}


@dataclass
class State:
    transient: list[tuple[int, str]] = field(default_factory=list)  # (status, Retry-After) answered next
    token_requests: list[tuple[str, list[str]]] = field(default_factory=list)  # (user, scopes)
    registry_seen: list[tuple[str, str, str]] = field(default_factory=list)  # method, path, Authorization
    storage_seen: list[tuple[str, str]] = field(default_factory=list)  # path, Authorization
    tokens: dict[str, set[str]] = field(default_factory=dict)  # token -> "repo:action" grants
    manifests: dict[str, bytes] = field(default_factory=dict)
    storage_address: str = ""
    corrupt_blob: bool = False


def _handler(state: State, role: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def handle_any(self) -> None:
            {"registry": self.registry, "storage": self.storage}[role]()

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = handle_any  # noqa: N815 - http.server names

        def storage(self) -> None:
            auth = self.headers.get("Authorization", "")
            state.storage_seen.append((self.path, auth))
            if auth:
                self.reply(400, b"storage refuses requests that carry Authorization")
                return
            self.reply(200, BLOB[:-1] + b"!" if state.corrupt_blob else BLOB)

        def token(self) -> None:
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            user, granted = "", set()
            basic = self.headers.get("Authorization", "").removeprefix("Basic ")
            if self.command == "POST":  # OAuth2 refresh-token grant: an identity token stands for its user
                query = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                user = REFRESH_TOKENS.get(query.get("refresh_token", [""])[0], "")
                if query.get("grant_type") != ["refresh_token"] or not user:
                    self.reply(401)
                    return
            elif basic:
                user, _, password = base64.b64decode(basic).decode().partition(":")
                if USERS.get(user, ("",))[0] != password:
                    self.reply(401)
                    return
            scopes = query.get("scope", [])
            state.token_requests.append((user, scopes))
            for scope in scopes:
                _, repository, actions = scope.split(":")
                allowed = USERS.get(user, ("", ""))[1].split(",")
                granted |= {f"{repository}:{action}" for action in actions.split(",") if action in allowed}
            token = f"t{len(state.tokens)}"
            state.tokens[token] = granted
            self.reply(200, json.dumps({"token": token}).encode())

        def registry(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == "/token":
                self.token()
                return
            auth = self.headers.get("Authorization", "")
            state.registry_seen.append((self.command, self.path, auth))
            if state.transient:
                status, wait = state.transient.pop(0)
                self.reply(status, headers={"Retry-After": wait} if wait else {})
                return
            parts = path.removeprefix("/v2/").split("/")
            repository = "/".join(parts[:-2]) if len(parts) > 2 else ""
            action = "pull" if self.command in ("GET", "HEAD") else "push"
            token = auth.removeprefix("Bearer ")
            if token not in state.tokens or (repository and f"{repository}:{action}" not in state.tokens[token]):
                scope = f',scope="repository:{repository}:{action}"' if repository else ""
                error = ',error="insufficient_scope"' if token in state.tokens else ""
                realm = f"http://{self.headers['Host']}/token"
                self.reply(401, headers={"WWW-Authenticate": f'Bearer realm="{realm}",service="fake"{scope}{error}'})
                return
            self.api(parts, repository)

        def api(self, parts: list[str], repository: str) -> None:
            if not repository:
                self.reply(200)
            elif parts[-2] == "blobs":
                self.reply(307, headers={"Location": f"http://{state.storage_address}/data/{parts[-1]}"})
            elif self.command == "PUT":
                state.manifests[parts[-1]] = self.rfile.read(int(self.headers["Content-Length"]))
                self.reply(201, headers={"Docker-Content-Digest": MANIFEST_DIGEST})
            elif parts[-1] in state.manifests or parts[-1] == MANIFEST_DIGEST:
                self.reply(200, MANIFEST, {"Docker-Content-Digest": MANIFEST_DIGEST,
                                           "Content-Type": "application/vnd.oci.image.manifest.v1+json"})
            else:
                self.reply(404)

    return Handler


@contextmanager
def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def fake_registry(setup: Callable[[State], None] = lambda state: None) -> Iterator[tuple[str, State]]:
    """(registry address, its state); a storage host on another port serves its blobs."""
    state = State(manifests={"v1": MANIFEST})
    setup(state)
    with _serve(_handler(state, "storage")) as storage, _serve(_handler(state, "registry")) as registry:
        state.storage_address = storage
        yield registry, state


def login(config: Path, host: str, user: str, password: str) -> None:
    """docker's config.json in the folder `config` (DOCKER_CONFIG), logged in to `host` as `user`."""
    from pudev.registry.credentials import Credentials

    auth = Credentials(user, password, "").basic()
    (config / "config.json").write_text(json.dumps({"auths": {host: {"auth": auth}}}))
