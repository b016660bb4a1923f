"""The storage host that blob GETs are redirected to, as GHCR and Docker Hub send
them to a CDN or S3: it serves the registry's storage files by their driver path
(/docker/registry/v2/blobs/sha256/<2 hex>/<hex>/data), answers GET and HEAD
only, and refuses any request carrying an `Authorization` header with 400, as S3
does when a presigned URL also gets a header ("Only one auth mechanism
allowed"). Every request is recorded with its headers, so a test can prove the
registry token never reached it. No Range support: clients here fetch whole blobs."""

from __future__ import annotations

import shutil
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from https_service import HttpsService, LoggingHandler

REFUSAL = (b"storage host: refusing a request that carries an Authorization header; the registry's token must "
           b"never leave the registry host (a client must drop it when it follows a redirect to another host)\n")


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]
    status: int


class StorageHost:
    def __init__(self, root: Path, context: ssl.SSLContext, *, hostname: str = "localhost",
                 log: Path | None = None) -> None:
        self.root, self.hostname = root, hostname
        self.requests: list[SeenRequest] = []
        self._lock = threading.Lock()
        host = self

        class Handler(LoggingHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server names
                status = host.serve(self)
                with host._lock:
                    host.requests.append(SeenRequest(self.command, self.path, dict(self.headers.items()), status))

            do_HEAD = do_GET  # noqa: N815

            def do_other(self) -> None:
                self.reply(405, b"storage host: GET and HEAD only\n", {"Allow": "GET, HEAD"})
                with host._lock:
                    host.requests.append(SeenRequest(self.command, self.path, dict(self.headers.items()), 405))

            do_PUT = do_POST = do_PATCH = do_DELETE = do_other  # noqa: N815

        self.service = HttpsService(Handler, context, log)

    @property
    def base_url(self) -> str:
        return f"https://{self.hostname}:{self.service.port}"

    def serve(self, handler: LoggingHandler) -> int:
        if "Authorization" in handler.headers:
            handler.reply(400, REFUSAL, {"Content-Type": "text/plain"})
            return 400
        root = self.root.resolve()
        target = (root / unquote(urlsplit(handler.path).path).lstrip("/")).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            handler.reply(404, b"storage host: no such object\n", {"Content-Type": "text/plain"})
            return 404
        handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(target.stat().st_size))
        handler.end_headers()
        if handler.command == "GET":
            with target.open("rb") as data:
                shutil.copyfileobj(data, handler.wfile, 1 << 20)  # streamed, never whole in memory
        return 200

    def with_authorization(self) -> list[SeenRequest]:
        """Requests that reached this host carrying an Authorization header (each was refused)."""
        with self._lock:
            return [seen for seen in self.requests if any(k.lower() == "authorization" for k in seen.headers)]

    def start(self) -> None:
        self.service.start()

    def stop(self) -> None:
        self.service.stop()
