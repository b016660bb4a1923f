"""The hashed lock a variant's image installs: where it lives, and the check that it exists and
is really hashed before any build starts."""

from __future__ import annotations

from pathlib import Path

from pudev.common.inputs import InputFile
from pudev.common.lock_file import pinned
from pudev.config.model import Variant
from pudev.paths import REQUIREMENTS_DIR


def lock_dir() -> Path:
    return REQUIREMENTS_DIR / "lock"


def lock_path(variant: Variant) -> Path:
    return lock_dir() / f"{variant.lock}.txt"


def tools_lock_path() -> Path:
    return lock_dir() / "build-tools.txt"


def rarely_changing_path() -> Path:
    """The packages the image installs in a step of their own, before the rest (pudev.common.lock_file)."""
    return REQUIREMENTS_DIR / "rarely-changing.txt"


def require_lock(variant: Variant, *, profile: str = "", flags: str = "") -> Path:
    """The variant's lock, checked: present, a file, UTF-8, pins with hashes. `flags` are the
    overriding flags of this run, which the advised `pudev lock` must repeat to make this lock."""
    command = (f"pudev lock --profile {profile}" if profile else f"pudev lock {variant.name}") + flags
    source = InputFile(lock_path(variant), "lock", f"variant {variant.name}'s lock '{variant.lock}'",
                       f"run `{command}`")
    text = source.read_text()
    if not pinned(text):
        raise source.fail("pins no package (no NAME==VERSION lines)")
    if "--hash=sha256:" not in text:
        raise source.fail("has no --hash pins, so the build could not check what it downloads")
    return source.path
