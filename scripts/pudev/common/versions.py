"""Release numbers compared as numbers: 13.10 comes after 13.9."""

from __future__ import annotations


def release(version: str) -> tuple[int, ...]:
    """"13.10" -> (13, 10); every part must be a number."""
    return tuple(int(part) for part in version.split("."))
