"""Named override sets. The local profile is the stand-in build, declared once."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pudev.common.errors import PudevError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Profile:
    name: str
    variant: str
    overrides: dict[str, Any]


def load_profile(path: Path, name: str) -> Profile:
    """Read [profiles.NAME] from the stand-in file: a variant plus its overrides."""
    with path.open("rb") as handle:
        raw = tomllib.load(handle)
    profiles = raw.get("profiles", {})
    if name not in profiles:
        raise PudevError(f"unknown profile '{name}': valid profiles are {', '.join(profiles) or 'none'}")
    table = dict(profiles[name])
    variant = table.pop("variant", None)
    if not isinstance(variant, str):
        raise PudevError(f"{path}: profile {name}: field 'variant' is missing; name the variant it builds")
    return Profile(name=name, variant=variant, overrides=table)
