"""A Dockerfile read as its instructions, for tests that hold other files to what the Dockerfiles do."""

from __future__ import annotations

from pathlib import Path


def instructions(dockerfile: Path) -> list[str]:
    """The Dockerfile's instructions, each continued line joined, comments left out."""
    lines = [line for line in dockerfile.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#")]
    return [part.strip() for part in "\n".join(lines).replace("\\\n", " ").split("\n") if part.strip()]
