"""The one error type users see: a single line naming the problem and the fix."""

from __future__ import annotations


class PudevError(Exception):
    """A user-facing failure. The CLI prints it as one line and exits non-zero.

    `detail` holds optional extra lines (for example the tail of a build log)
    printed after the one-line message.
    """

    def __init__(self, message: str, *, detail: str = "", exit_code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message
