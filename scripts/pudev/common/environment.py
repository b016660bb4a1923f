"""The PUDEV_* variables that change what the host CLI does (besides PUDEV_DOCKER, a path checked where
the engine is first asked), read in one place. Every command checks them all before any work, so a
bad value fails in one line naming the variable, never as a ValueError in the middle of a push."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from pudev.common.errors import PudevError


@dataclass(frozen=True)
class Setting:
    name: str
    default: str
    meaning: str  # what a good value is, as the error says it
    valid: Callable[[str], bool]


def _count(minimum: int) -> Callable[[str], bool]:
    return lambda text: text.isdigit() and int(text) >= minimum


def _seconds(text: str) -> bool:
    try:
        return float(text) >= 0
    except ValueError:
        return False


SETTINGS = {setting.name: setting for setting in (
    Setting("PUDEV_REGISTRY_RETRIES", "4", "a whole number of retries, 0 or more", _count(0)),
    Setting("PUDEV_PUBLISH_ATTEMPTS", "4", "a whole number of attempts, 1 or more", _count(1)),
    Setting("PUDEV_REGISTRY_MAX_WAIT", "120", "the longest wait a registry may ask for, in seconds", _seconds),
    Setting("PUDEV_REQUIRE_GPU", "0", "1 (the GPU tests must find a GPU) or 0", lambda text: text in ("0", "1")),
    Setting("PUDEV_STRICT", "0", "1 (a skipped test fails the run) or 0", lambda text: text in ("0", "1")),
)}


def setting(name: str) -> str:
    """The variable's value, or its default when it is unset; a set but empty or bad value is an error
    (an empty one is usually a variable a script forgot to fill, not a request for the default)."""
    known = SETTINGS[name]
    value = os.environ.get(name)
    if value is None:
        return known.default
    if not known.valid(value.strip()):
        raise PudevError(f"{name}={value!r}: not {known.meaning}; set it to such a value (e.g. "
                         f"{name}={known.default}), or unset it for the default")
    return value.strip()


def check_all() -> None:
    for name in SETTINGS:
        setting(name)
