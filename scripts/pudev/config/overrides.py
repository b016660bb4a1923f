"""Per-run changes to variant fields, each remembering which flag (or profile) made it,
so an error it causes names that flag instead of the variant file."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pudev.common.errors import PudevError
from pudev.config.schema import Schema

TOOLKIT_KEY = re.compile(r"toolkit\.(?P<version>\d+\.\d+)\.(?P<field>[a-z_]+)")
VARIANT_KEYS: tuple[str, ...] = tuple(key for key in Schema.VARIANT if key != "on")  # `on` holds tables
TOOLKIT_FIELDS: tuple[str, ...] = tuple(Schema.TOOLKIT)
HELP = (
    "keys: " + ", ".join(VARIANT_KEYS) + ", " + ", ".join(f"toolkit.X.Y.{f}" for f in TOOLKIT_FIELDS)
    + " (toolkits, required_tests and platforms take comma-separated lists such as 11.8,12.4 or cpu,gpu)"
)


@dataclass(frozen=True)
class Override:
    key: str  # a variant field (torch) or a toolkit field (toolkit.12.4.image)
    value: Any
    source: str  # "--set torch=2.4.1", "--base-image", "profile local (docker/standins/standins.toml)"
    platform: str = ""  # the one platform's build it changes ("": every platform's)


def check_key(key: str) -> bool:
    toolkit = TOOLKIT_KEY.fullmatch(key)
    return key in VARIANT_KEYS or (toolkit is not None and toolkit["field"] in TOOLKIT_FIELDS)


def parse_assignments(assignments: Iterable[str]) -> list[Override]:
    """`--set KEY=VALUE` flags as typed overrides."""
    found = []
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        key = key.strip()
        if not sep or not key:
            raise PudevError(f"--set {assignment}: invalid override, write KEY=VALUE ({HELP})")
        if not check_key(key):
            raise PudevError(f"--set {assignment}: invalid override, unknown key '{key}' ({HELP})")
        if not value.strip():
            raise PudevError(f"--set {assignment}: an empty value; write {key}=VALUE, or leave the flag out")
        found.append(Override(key, _typed(key, value.strip(), assignment), f"--set {assignment}"))
    return found


def parse_toolkit_images(assignments: Iterable[str]) -> list[Override]:
    """`--toolkit-image 12.4=IMAGE` is `--set toolkit.12.4.image=IMAGE`."""
    found = []
    for assignment in assignments:
        version, sep, image = assignment.partition("=")
        if not sep or not re.fullmatch(r"\d+\.\d+", version.strip()) or not image.strip():
            raise PudevError(f"--toolkit-image {assignment}: write VERSION=IMAGE, e.g. 12.1=nvidia/cuda:...")
        found.append(Override(f"toolkit.{version.strip()}.image", image.strip(), f"--toolkit-image {assignment}"))
    return found


def _typed(key: str, value: str, assignment: str) -> Any:
    if key in ("toolkits", "required_tests", "platforms") or key.endswith(".platforms"):
        return [item.strip() for item in value.split(",") if item.strip()]
    if key.endswith(".max_gcc"):
        if not value.isdigit():
            raise PudevError(f"--set {assignment}: invalid override, max_gcc takes a whole number such as 11")
        return int(value)
    return value
