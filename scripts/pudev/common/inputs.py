"""Files the user hands us (variant file, stand-in file, CA bundle, locks), read
with every failure as one line that names the file, where it came from, and the fix."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pudev.common.errors import PudevError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 hosts only
    import tomli as tomllib


@dataclass(frozen=True)
class InputFile:
    """A file input: its path, what it is, and the flag (or variable) that named it."""

    path: Path
    what: str  # "variant file", "CA bundle", ...
    source: str  # "--variants-file", "the default of --variants-file", "PIP_CERT", ...
    fix: str  # what to do when it is unusable, e.g. "pass a TOML variant file to --variants-file"

    def fail(self, problem: str) -> PudevError:
        return PudevError(f"{self.path} ({self.what}, from {self.source}): {problem}; {self.fix}")

    def read_text(self) -> str:
        """The file's text: it must exist, be a regular file, hold something, and be UTF-8."""
        if not self.path.exists():
            raise self.fail("not found")
        if self.path.is_dir():
            raise self.fail("is a directory, not a file")
        try:
            data = self.path.read_bytes()
        except OSError as error:
            raise self.fail(f"cannot be read ({error.strerror})") from None
        if not data.strip():
            raise self.fail("is empty")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise self.fail(f"is not UTF-8 text (byte {error.start})") from None

    def read_toml(self) -> dict[str, Any]:
        text = self.read_text()
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise self.fail(f"is not valid TOML ({error})") from None

    def read_json(self) -> Any:
        text = self.read_text()
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise self.fail(f"is not valid JSON ({error.msg} at line {error.lineno})") from None
