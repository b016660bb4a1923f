"""A small HTTP proxy in front of a registry that sees every request: the release
tests use it to stop the registry at an exact point of a promote, and to prove
that a rerun sends no layer; the realistic registry puts it (TLS in and out) in
front of Distribution to answer chosen requests itself, e.g. 429 with
Retry-After (throttle.py). `before` may answer a request instead of the
registry; `after` runs on each answer, before the client receives it. HTTP/1.0
towards the client: no connection outlives a request, so stopping the proxy
leaves nothing behind."""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from io import BufferedIOBase
from pathlib import Path

from https_service import HttpsService, LoggingHandler

Hook = Callable[[str, str, int], None]  # method, path, status: called on each answer


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


Before = Callable[[str, str, Mapping[str, str]], Reply | None]  # method, path, headers: a Reply answers it here
HOP_BY_HOP = ("connection", "transfer-encoding", "content-length", "keep-alive")


def read_body(headers: Message, stream: BufferedIOBase) -> bytes | None:
    """The request body, de-chunked: a streaming client sends `Transfer-Encoding: chunked` and no length."""
    read, readline = stream.read, stream.readline
    if "chunked" in (headers.get("Transfer-Encoding") or "").lower():
        parts: list[bytes] = []
        while True:
            size = int(readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while readline().strip():  # trailers, up to the blank line
                    pass
                return b"".join(parts)
            parts.append(read(size))
            readline()  # the CRLF after each chunk
    length = int(headers.get("Content-Length") or 0)
    return read(length) if length else None


class RegistryProxy:
    def __init__(self, upstream: str, *, server_tls: ssl.SSLContext | None = None,
                 upstream_tls: ssl.SSLContext | None = None, log: Path | None = None) -> None:
        self.upstream, self.upstream_tls = upstream, upstream_tls
        self.requests: list[tuple[str, str, int]] = []
        self.after: Hook = lambda method, path, status: None
        self.before: Before = lambda method, path, headers: None
        proxy = self

        class Handler(LoggingHandler):
            def _forward(self) -> None:
                headers = {key: value for key, value in self.headers.items() if key.lower() not in HOP_BY_HOP}
                body = read_body(self.headers, self.rfile)
                own = proxy.before(self.command, self.path, headers)
                answer = own if own is not None else proxy.relay(self.command, self.path, body, headers)
                # Recorded, and `after` run, before the client has the answer: a test that acts on it (stops
                # the registry after the second tag) does so before the client can send its next request.
                proxy.requests.append((self.command, self.path, answer.status))
                proxy.after(self.command, self.path, answer.status)
                self.reply(answer.status, answer.body, answer.headers)

            do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _forward  # noqa: N815 - http.server names

        self.service = HttpsService(Handler, server_tls, log)

    def relay(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        if self.upstream_tls is not None:
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(self.upstream, timeout=60,
                                                                                 context=self.upstream_tls)
        else:
            connection = http.client.HTTPConnection(self.upstream, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers)  # Host stays the proxy's: Locations say so
            answer = connection.getresponse()
            data = answer.read()
        except OSError:
            return Reply(502)  # the registry went away behind the proxy
        finally:
            connection.close()
        kept = {key: value for key, value in answer.getheaders() if key.lower() not in HOP_BY_HOP}
        if method == "HEAD" and answer.getheader("Content-Length"):
            kept["Content-Length"] = answer.getheader("Content-Length", "")  # a HEAD's length is the object's
        return Reply(answer.status, kept, data)

    @property
    def port(self) -> int:
        return self.service.port

    @property
    def address(self) -> str:
        return self.service.address

    def start(self) -> None:
        self.service.start()

    def stop(self) -> None:
        self.service.stop()

    def __enter__(self) -> RegistryProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def uploads(self) -> list[tuple[str, str, int]]:
        """Blob uploads (a mount is not one): POSTs without ?mount=, and PATCH/PUT to upload sessions."""
        return [(method, path, status) for method, path, status in self.requests
                if "/blobs/uploads/" in path and "mount=" not in path]
