"""Field checks for the variant file: each failure names the field and the fix."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from pudev.common.imageref import is_image_name, parse_image_ref
from pudev.mirror.catalogue import MIRROR_CHOICES


class FieldError(ValueError):
    """A bad field; the loader prefixes the file name."""


def _matches(pattern: str, expected: str) -> Callable[[Any], str]:
    compiled = re.compile(pattern)

    def check(value: Any) -> str:
        if isinstance(value, str) and compiled.fullmatch(value):
            return ""
        return f"{value!r} is not {expected}"

    return check


def _image_ref(value: Any) -> str:
    if isinstance(value, str) and parse_image_ref(value) is not None:
        return ""
    return f"{value!r} is not a valid image reference (expected [registry/]name[:tag][@sha256:digest])"


def _image_name(value: Any) -> str:
    if isinstance(value, str) and is_image_name(value):
        return ""
    return f"{value!r} is not a valid image name (lower-case [registry/]path, no tag)"


def _mirror(value: Any) -> str:
    return "" if value in MIRROR_CHOICES else f"{value!r} is not a mirror (choose {', '.join(MIRROR_CHOICES)})"


def _gcc(value: Any) -> str:
    ok = isinstance(value, int) and not isinstance(value, bool) and 4 <= value <= 99
    return "" if ok else f"{value!r} is not a gcc major version (a whole number such as 11)"


def _version_list(value: Any) -> str:
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(item, str) and re.fullmatch(r"\d+\.\d+", item) for item in value)
    ):
        return ""
    return f"{value!r} is not two toolkit slots (a list of two CUDA versions such as [\"11.8\", \"12.1\"])"


def _table(value: Any) -> str:
    return "" if isinstance(value, dict) else f"{value!r} is not a table"


_CUDA = _matches(r"\d+\.\d+", "a CUDA version (MAJOR.MINOR, such as 12.1)")
_TORCH = _matches(r"\d+\.\d+\.\d+", "a torch release (such as 2.5.1)")
_PYTHON = _matches(r"3\.\d+", "a Python version (such as 3.11)")
_PLATFORM = _matches(r"linux/(amd64|arm64)", "a platform (linux/amd64 or linux/arm64)")
_ARCH_LIST = _matches(
    r"\d+\.\d+(\+PTX)?(;\d+\.\d+(\+PTX)?)*", "a TORCH_CUDA_ARCH_LIST (such as 8.0;8.6;9.0+PTX)"
)

Check = Callable[[Any], str]


class Schema:
    """Which fields each table takes, and how each is checked. True = required."""

    SHARED: ClassVar[dict[str, tuple[Check, bool]]] = {
        "image": (_image_name, True),
        "python": (_PYTHON, True),
        "platform": (_PLATFORM, True),
        "mirror": (_mirror, True),
        "build_mirror": (_mirror, False),
        "cuda_arch_list": (_ARCH_LIST, True),
    }
    TOP: ClassVar[dict[str, tuple[Check, bool]]] = {
        **SHARED,
        "default_variant": (_matches(r"[a-z0-9][a-z0-9-]*", "a variant name"), True),
        "toolkits": (_table, True),
        "variants": (_table, True),
    }
    VARIANT: ClassVar[dict[str, tuple[Check, bool]]] = {
        **SHARED,
        "torch": (_TORCH, True),
        "cuda": (_CUDA, True),
        "base_image": (_image_ref, True),
        "toolkits": (_version_list, True),
        "default_toolkit": (_CUDA, True),
    }
    TOOLKIT: ClassVar[dict[str, tuple[Check, bool]]] = {
        "image": (_image_ref, True),
        "max_gcc": (_gcc, True),
    }
    CATALOGUE: ClassVar[dict[str, tuple[Check, bool]]] = {}


def check_table(table: Any, schema: dict[str, tuple[Check, bool]], *, where: str) -> None:
    """Raise FieldError for an unknown key, a missing required key, or a bad value."""
    if not isinstance(table, dict):
        raise FieldError(f"{where}expected a table, got {table!r}")
    if schema is Schema.CATALOGUE:
        for version, entry in table.items():
            if not re.fullmatch(r"\d+\.\d+", version):
                raise FieldError(f"toolkit {version!r}: not a CUDA version (MAJOR.MINOR)")
            if not isinstance(entry, dict):
                raise FieldError(f"toolkit {version}: expected a table with image and max_gcc")
        return
    for key in table:
        if key not in schema:
            raise FieldError(f"{where}unknown field '{key}' (known fields: {', '.join(schema)})")
    for key, (check, required) in schema.items():
        if key not in table:
            if required:
                raise FieldError(f"{where}field '{key}' is missing; add it")
            continue
        problem = check(table[key])
        if problem:
            raise FieldError(f"{where}field '{key}': {problem}")
