"""A small threaded HTTP(S) server on 127.0.0.1 that can be started, stopped and
started again on the same port: the base of the token server, the storage host
and the proxy."""

from __future__ import annotations

import ssl
import threading
import traceback
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, cast

from tls_accept import TlsHttpServer


class _Server(TlsHttpServer):
    def __init__(self, port: int, handler: type[BaseHTTPRequestHandler], context: ssl.SSLContext | None,
                 log: Path | None) -> None:
        self.log = log
        super().__init__(("127.0.0.1", port), handler, context)

    def write_log(self, line: str) -> None:
        if self.log is not None:
            with self.log.open("a") as out:
                out.write(line.rstrip("\n") + "\n")

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client refusing our certificate is what some tests are about: one line, not a traceback on stderr.
        self.write_log(f"error from {client_address}: {traceback.format_exc(limit=3)}")


class LoggingHandler(BaseHTTPRequestHandler):
    """Writes its access log to the service's log file instead of stderr; HTTP/1.0, so no connection outlives
    a request (stop() then leaves nothing behind)."""

    timeout = 60

    def log_message(self, format: str, *args: Any) -> None:
        cast(_Server, self.server).write_log(f"{self.address_string()} {format % args}")

    def reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        """Answer with `body`; a Content-Length in `headers` wins (a HEAD's length is the object's, not 0)."""
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if not any(key.lower() == "content-length" for key in headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class HttpsService:
    def __init__(self, handler: type[BaseHTTPRequestHandler], context: ssl.SSLContext | None = None,
                 log: Path | None = None) -> None:
        self.handler, self.context, self.log = handler, context, log
        # Bound here, not at the first start: a port probed free and bound later could meanwhile become another
        # connection's source port (a fresh `.ci/run` on 2026-12-08: "Address already in use" at the proxy's start).
        self._bound: _Server | None = _Server(0, handler, context, log)
        self.port = int(self._bound.server_address[1])
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        with self._lock:
            if self._server is not None:
                return
            self._server, self._bound = self._bound or _Server(self.port, self.handler, self.context, self.log), None
            self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                            name=f"https-{self.port}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._lock:
            server, thread, self._server, self._thread = self._server, self._thread, None, None
            bound, self._bound = self._bound, None
        if bound is not None:  # never started
            bound.server_close()
        if server is None:
            return
        server.shutdown()  # returns once the accept loop has ended (it polls every 0.1 s)
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

