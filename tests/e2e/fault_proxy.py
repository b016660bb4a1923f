"""A small HTTP proxy in front of the local registry that sees every request: the
release tests use it to stop the registry at an exact point of a promote, and to
prove that a rerun sends no layer."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jupyter_client_lite import free_port

Hook = Callable[[str, str, int], None]  # method, path, status: called after each answer


class RegistryProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.port = free_port()
        self.requests: list[tuple[str, str, int]] = []
        self.after: Hook = lambda method, path, status: None
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {key: value for key, value in self.headers.items() if key.lower() != "connection"}
                connection = http.client.HTTPConnection(proxy.upstream, timeout=60)
                try:
                    connection.request(self.command, self.path, body=body, headers=headers)
                    answer = connection.getresponse()
                    data = answer.read()
                except OSError:
                    self.send_response(502)  # the registry went away behind the proxy
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    proxy.requests.append((self.command, self.path, 502))
                    return
                finally:
                    connection.close()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                proxy.requests.append((self.command, self.path, answer.status))
                proxy.after(self.command, self.path, answer.status)

            do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _forward  # noqa: N815 - http.server names

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> RegistryProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def uploads(self) -> list[tuple[str, str, int]]:
        """Blob uploads (a mount is not one): POSTs without ?mount=, and PATCH/PUT to upload sessions."""
        return [(method, path, status) for method, path, status in self.requests
                if "/blobs/uploads/" in path and "mount=" not in path]
