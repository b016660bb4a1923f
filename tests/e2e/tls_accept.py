"""A threaded HTTP server that takes TLS handshakes in each request's own thread, so a client that
never completes one cannot block the accept loop. Standard library only: blocked_world.py runs it
inside a container, https_service.py on the host."""

from __future__ import annotations

import ssl
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class TlsHttpServer(ThreadingHTTPServer):
    daemon_threads = True  # a stuck client never holds up shutdown
    handshake_seconds: float | None = 10  # None: wait as long as the client does

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 context: ssl.SSLContext | None) -> None:
        self.context = context
        super().__init__(address, handler)

    def get_request(self) -> tuple[Any, Any]:
        connection, address = self.socket.accept()
        if self.context is not None:
            connection = self.context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
        return connection, address

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(self.handshake_seconds)
            request.do_handshake()
        super().finish_request(request, client_address)
