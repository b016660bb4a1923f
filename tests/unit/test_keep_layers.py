"""`pudev lock --keep-layers` (pudev.devtools.lock_resolver.keep_layers): before a lock is written again, the
lock as it is now is kept as the one the package layers are cut from, and an earlier kept one is never
overwritten (the layers stay where they were, however many re-locks follow); without the flag the kept
one goes, so the layers are cut from the new lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from pudev.building import requirement_locks
from pudev.config.selection import Selection, resolve
from pudev.devtools.lock_resolver import keep_layers


@pytest.fixture
def requirements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(requirement_locks, "REQUIREMENTS_DIR", tmp_path)
    (tmp_path / "lock").mkdir()
    return tmp_path


def test_the_first_keep_copies_the_lock_and_later_ones_leave_it(requirements: Path) -> None:
    (variant,) = resolve(Selection(profile="local")).variants
    lock, layered = requirement_locks.lock_path(variant), requirement_locks.layered_lock_path(variant)
    assert layered.parent.parent == lock.parent == requirements / "lock"
    lock.write_text("first==1.0\n")
    assert keep_layers(variant, keep=True) == layered and layered.read_text() == "first==1.0\n"
    lock.write_text("first==2.0\n")  # a re-lock with --keep-layers
    assert keep_layers(variant, keep=True) == layered and layered.read_text() == "first==1.0\n"
    assert keep_layers(variant, keep=False) is None and not layered.exists()
    assert keep_layers(variant, keep=False) is None  # nothing kept: nothing to remove
    lock.unlink()
    assert keep_layers(variant, keep=True) is None and not layered.exists()  # no lock yet: nothing to keep
