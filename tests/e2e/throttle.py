"""Rate limiting as Docker Hub and GHCR answer it: a `before` hook for the fault
proxy that answers the next N matching requests itself with 429 (or 503) and a
`Retry-After` header, and records each one it answered."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping

from fault_proxy import Reply

CODES = {429: "TOOMANYREQUESTS", 503: "UNAVAILABLE"}  # the registry API's error codes for these statuses


class Throttle:
    def __init__(self, count: int, retry_after: int | str = 1, *, status: int = 429,
                 when: Callable[[str, str], bool] | None = None) -> None:
        """`retry_after`: seconds, or a string sent as is (an HTTP date); `when(method, path)` picks requests."""
        self.remaining, self.retry_after, self.status = count, str(retry_after), status
        self.when = when or (lambda method, path: True)
        self.answered: list[tuple[str, str, int]] = []
        self._lock = threading.Lock()

    def __call__(self, method: str, path: str, headers: Mapping[str, str]) -> Reply | None:
        if not self.when(method, path):
            return None
        with self._lock:
            if self.remaining <= 0:
                return None
            self.remaining -= 1
            self.answered.append((method, path, self.status))
        error = {"code": CODES.get(self.status, "UNKNOWN"), "message": "throttled by the test proxy", "detail": {}}
        return Reply(self.status, {"Retry-After": self.retry_after, "Content-Type": "application/json"},
                     json.dumps({"errors": [error]}).encode())
