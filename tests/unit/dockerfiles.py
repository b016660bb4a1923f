"""A Dockerfile read as its instructions, for tests that hold other files to what the Dockerfiles do."""

from __future__ import annotations

from pathlib import Path


def instructions(dockerfile: Path) -> list[str]:
    """The Dockerfile's instructions, each continued line joined, comments left out."""
    lines = [line for line in dockerfile.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#")]
    return [part.strip() for part in "\n".join(lines).replace("\\\n", " ").split("\n") if part.strip()]


# What BuildKit sets itself for every build: a Dockerfile declares them to read them, nobody passes them.
BUILDKIT_ARGS = frozenset({"BUILDPLATFORM", "BUILDOS", "BUILDARCH", "TARGETPLATFORM", "TARGETOS", "TARGETARCH",
                           "TARGETVARIANT"})


def passed_args(dockerfile: Path, *, with_defaults: bool) -> set[str]:
    """The ARGs a build passes in (with_defaults: also those with a default), BuildKit's own left out."""
    declared = [line.split()[1] for line in dockerfile.read_text().splitlines() if line.startswith("ARG ")]
    return {item.split("=")[0] for item in declared if with_defaults or "=" not in item} - BUILDKIT_ARGS
