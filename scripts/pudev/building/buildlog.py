"""Read BuildKit's plain progress output: which step failed, and its last lines."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_HEADER = re.compile(r"^#(?P<id>\d+) \[(?P<stage>[\w.-]+)\s+(?P<step>\d+/\d+)\] (?P<instruction>.*)$")
_OUTPUT = re.compile(r"^#(?P<id>\d+) (?:\d+\.\d+ )?(?P<text>.*)$")
_ERROR = re.compile(r"^#(?P<id>\d+) ERROR: (?P<text>.*)$")
_MOUNT = re.compile(r"--mount=\S+\s*")


@dataclass(frozen=True)
class BuildFailure:
    stage: str
    step: str
    instruction: str
    error: str
    log_tail: list[str]

    def summary(self) -> str:
        # The command, not the mounts before it: `RUN sh /tmp/steps/install-packages.sh ... the-rest`.
        instruction = " ".join(_MOUNT.sub("", self.instruction).split())
        instruction = instruction if len(instruction) <= 90 else instruction[:87] + "..."
        return f"failed in stage '{self.stage}' (step {self.step}: {instruction})"


def find_failure(lines: Iterable[str], tail: int = 15) -> BuildFailure | None:
    """The first failed step in a plain-progress log, or None when no step failed."""
    headers: dict[str, tuple[str, str, str]] = {}
    output: dict[str, list[str]] = {}
    for raw_line in lines:
        line = raw_line.rstrip("\n")
        header = _HEADER.match(line)
        if header:
            headers[header["id"]] = (header["stage"], header["step"], header["instruction"])
            continue
        error = _ERROR.match(line)
        if error and error["id"] in headers:
            stage, step, instruction = headers[error["id"]]
            return BuildFailure(stage, step, instruction, error["text"], output.get(error["id"], [])[-tail:])
        text = _OUTPUT.match(line)
        if text and text["id"] in headers and not text["text"].startswith(("sha256:", "DONE", "CACHED")):
            output.setdefault(text["id"], []).append(text["text"])
    return None
