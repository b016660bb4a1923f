"""Per-run overrides of variant fields (`--set KEY=VALUE` and its shorthands)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pudev.common.errors import PudevError
from pudev.validation import Schema

_TOOLKIT_KEY = re.compile(r"toolkit\.(?P<version>\d+\.\d+)\.(?P<field>image|max_gcc)")
VARIANT_KEYS: tuple[str, ...] = tuple(Schema.VARIANT)
HELP = (
    "keys: " + ", ".join(VARIANT_KEYS) + ", toolkit.X.Y.image, toolkit.X.Y.max_gcc "
    "(toolkits takes a comma-separated pair such as 11.8,12.4)"
)


def parse_overrides(assignments: Iterable[str]) -> dict[str, Any]:
    """Turn ["torch=2.4.1", "toolkits=11.8,12.4"] into typed raw field values."""
    fields: dict[str, Any] = {}
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        key = key.strip()
        if not sep or not key:
            raise PudevError(f"invalid override '{assignment}': write KEY=VALUE ({HELP})")
        toolkit = _TOOLKIT_KEY.fullmatch(key)
        if toolkit is None and key not in VARIANT_KEYS:
            raise PudevError(f"invalid override '{assignment}': unknown key '{key}' ({HELP})")
        fields[key] = _typed(key, value.strip(), assignment)
    return fields


def toolkit_image_overrides(assignments: Iterable[str]) -> dict[str, Any]:
    """`--toolkit-image 12.4=IMAGE` is `--set toolkit.12.4.image=IMAGE`."""
    fields: dict[str, Any] = {}
    for assignment in assignments:
        version, sep, image = assignment.partition("=")
        if not sep or not re.fullmatch(r"\d+\.\d+", version.strip()):
            raise PudevError(f"invalid --toolkit-image '{assignment}': write VERSION=IMAGE, e.g. 12.1=nvidia/cuda:...")
        fields[f"toolkit.{version.strip()}.image"] = image.strip()
    return fields


def _typed(key: str, value: str, assignment: str) -> Any:
    if key == "toolkits":
        return [item.strip() for item in value.split(",") if item.strip()]
    if key.endswith(".max_gcc"):
        if not value.isdigit():
            raise PudevError(f"invalid override '{assignment}': max_gcc takes a whole number such as 11")
        return int(value)
    return value
