"""The hashed lock a variant's image installs: where it lives, and the check that
it exists and is really hashed before any build starts; likewise the lock its package
layers were cut from, where `pudev lock --keep-layers` kept one."""

from __future__ import annotations

import re
from pathlib import Path

from pudev.common.inputs import InputFile
from pudev.config.model import Variant
from pudev.paths import REQUIREMENTS_DIR

_PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==\S+", re.MULTILINE)


def lock_dir() -> Path:
    return REQUIREMENTS_DIR / "lock"


def lock_path(variant: Variant) -> Path:
    return lock_dir() / f"{variant.lock}.txt"


def layered_lock_path(variant: Variant) -> Path:
    """The lock the variant's package layers were cut from (lock_slices.py --layered); none: the lock itself."""
    return lock_dir() / "layered" / f"{variant.lock}.txt"


def tools_lock_path() -> Path:
    return lock_dir() / "build-tools.txt"


def layers_path() -> Path:
    """Which packages each of the image's package layers installs (pudev.building.lock_slices)."""
    return REQUIREMENTS_DIR / "layers.txt"


def require_lock(variant: Variant, *, profile: str = "", flags: str = "") -> Path:
    """The variant's lock, checked: present, a file, UTF-8, pins with hashes. `flags` are the
    overriding flags of this run, which the advised `pudev lock` must repeat to make this lock."""
    command = (f"pudev lock --profile {profile}" if profile else f"pudev lock {variant.name}") + flags
    source = InputFile(lock_path(variant), "lock", f"variant {variant.name}'s lock '{variant.lock}'",
                       f"run `{command}`")
    _require_hashed_pins(source)
    if layered_lock_path(variant).exists():
        _require_hashed_pins(InputFile(
            layered_lock_path(variant), "the lock the package layers were cut from",
            f"`pudev lock --keep-layers`, for variant {variant.name}",
            f"delete it, or run `{command}` without --keep-layers, to cut the layers from the lock"))
    return source.path


def _require_hashed_pins(source: InputFile) -> None:
    text = source.read_text()
    if not _PIN.search(text):
        raise source.fail("pins no package (no NAME==VERSION lines)")
    if "--hash=sha256:" not in text:
        raise source.fail("has no --hash pins, so the build could not check what it downloads")
