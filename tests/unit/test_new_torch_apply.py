"""`pudev new-torch`'s apply (transaction.swap_in and recover): whatever fails or kills it, the tree ends
either unmoved or fully moved, byte for byte, and every failure is one line naming the file and the fix.
A small tree of its own stands for the checkout: files rewritten, one added in a new folder, one removed,
and a --variants-file outside it. The file runs in about 1 s (measured: 0.5 to 1.6 s)."""

from __future__ import annotations

import builtins
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pudev.common.errors import PudevError
from pudev.devtools.new_torch import transaction
from pudev.devtools.new_torch.transaction import JOURNAL, changes, recover, staged_path, swap_in

# The checkout before the move, and what the move writes (None: removes). Outside the touched paths,
# scripts/ is never read or written.
BEFORE = {"README.md": b"torch 1.0\n", "docs/quickstart.md": b"pull :1.0\n", "docs/zh/quickstart.md": b"1.0\n",
          "requirements/lock/torch1.0.txt": b"torch==1.0\n", "docker/variants.toml": b'torch = "1.0"\n',
          "scripts/tool.py": b"print()\n"}
MOVE: dict[str, bytes | None] = {"README.md": b"torch 1.1\n", "docs/quickstart.md": b"pull :1.1\n",
                                 "docs/zh/quickstart.md": b"1.1\n", "docs/new/page.md": b"new\n",
                                 "requirements/lock/torch1.0.txt": None,
                                 "requirements/lock/torch1.1.txt": b"torch==1.1\n"}
AFTER = {**{name: text for name, text in BEFORE.items() if MOVE.get(name, text) is not None},
         **{name: text for name, text in MOVE.items() if text is not None}}
MATRIX = b'torch = "1.1"\n'  # the moved --variants-file


def _write(root: Path, files: dict[str, bytes]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text)


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root`, dotfiles (a staged file, the journal) included; empty folders too."""
    found = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    return {**found, **{f"{p.relative_to(root)}/": b"" for p in root.rglob("*") if p.is_dir() and not any(p.iterdir())}}


class Move:
    """The checkout (`root`), the scratch copy the move was made in (`copy`), and a --variants-file outside."""

    def __init__(self, folder: Path) -> None:
        self.root, self.copy, self.outside = folder / "repo", folder / "scratch", folder / "elsewhere/variants.toml"
        _write(self.root, BEFORE)
        for name in transaction.TOUCHED:
            if (self.root / name).is_dir():
                shutil.copytree(self.root / name, self.copy / name)
            elif (self.root / name).exists():
                shutil.copy(self.root / name, self.copy / name)
        for name, text in MOVE.items():
            if text is None:
                (self.copy / name).unlink()
            else:
                _write(self.copy, {name: text})
        _write(self.copy, {"docker/variants.toml": MATRIX})
        self.outside.parent.mkdir()
        self.outside.write_bytes(BEFORE["docker/variants.toml"])
        self.changed = changes(self.copy, self.root)

    def apply(self) -> None:
        swap_in(self.copy, self.root, self.changed, moved={"docker/variants.toml": self.outside})

    def unmoved(self) -> bool:
        return _snapshot(self.root) == BEFORE and self.outside.read_bytes() == BEFORE["docker/variants.toml"] \
            and list(self.outside.parent.iterdir()) == [self.outside]

    def moved(self) -> bool:
        return _snapshot(self.root) == AFTER and self.outside.read_bytes() == MATRIX \
            and list(self.outside.parent.iterdir()) == [self.outside]


@pytest.fixture
def move(tmp_path: Path) -> Move:
    return Move(tmp_path)


def _refusing(path: Path, mode: str, code: int, *, partly: bool = False) -> Any:
    """open() as the transaction calls it, failing with `code` for `path` opened in `mode` (having written a
    few bytes first where `partly`: a disk that fills up midway)."""
    def fake(file: Any, how: str = "r", *args: Any, **kwargs: Any) -> Any:
        if Path(file) == path and how == mode:
            if partly:
                Path(file).write_bytes(b"half")
            raise OSError(code, os.strerror(code), str(file))
        return builtins.open(file, how, *args, **kwargs)
    return fake


def test_the_apply_moves_every_file_and_leaves_nothing_behind(move: Move) -> None:
    assert move.changed == {"README.md": True, "docker/variants.toml": True, "docs/new/page.md": True,
                            "docs/quickstart.md": True, "docs/zh/quickstart.md": True,
                            "requirements/lock/torch1.1.txt": True, "requirements/lock/torch1.0.txt": False}
    move.apply()
    assert move.moved()  # no journal, no staged file, the --variants-file moved and not the tree's matrix
    assert recover(move.root, also=[move.outside]) == ""


@pytest.mark.parametrize("name", ["docs/quickstart.md", "requirements/lock/torch1.0.txt", "variants-file"])
def test_a_target_that_cannot_be_replaced_stops_the_apply_before_any_change(
        move: Move, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """An immutable file (or one on a read-only disk) refuses open(r+b): one written, one the move removes,
    the --variants-file outside the tree. Checked before anything is renamed, whatever the order."""
    target = move.outside if name == "variants-file" else move.root / name
    monkeypatch.setattr(transaction, "open", _refusing(target, "r+b", errno.EPERM), raising=False)
    with pytest.raises(PudevError) as raised:
        move.apply()
    line = str(raised.value)
    assert "\n" not in line and (str(move.outside) if name == "variants-file" else name) in line
    assert "chattr -i" in line and "unchanged" in line
    assert move.unmoved()  # nothing staged left behind, no folder created


@pytest.mark.parametrize(("code", "fix"), [(errno.ENOSPC, "free space on the disk that holds docs"),
                                           (errno.EPERM, "make docs writable (chattr -i"),
                                           (errno.EROFS, "read-write")], ids=["full-disk", "folder", "read-only"])
@pytest.mark.parametrize("name", ["README.md", "docs/quickstart.md", "docs/new/page.md"])
def test_a_file_that_cannot_be_staged_stops_the_apply_and_takes_back_what_was_staged(
        move: Move, monkeypatch: pytest.MonkeyPatch, code: int, fix: str, name: str) -> None:
    """Staging `name` fails midway (written in part): the files staged before it, the part, and the folder made
    for a new file all go; the tree is as it was."""
    monkeypatch.setattr(transaction, "open", _refusing(staged_path(move.root / name), "wb", code, partly=True),
                        raising=False)
    with pytest.raises(PudevError) as raised:
        move.apply()
    line = str(raised.value)
    folder = str(Path(name).parent).replace(".", "the checkout's folder")
    assert name in line and fix.replace("docs", folder) in line, line
    assert move.unmoved()


def test_an_immutable_file_for_real(move: Move) -> None:
    """chattr +i where this filesystem and user allow it (the monkeypatched tests above hold everywhere)."""
    target = move.root / "docs/quickstart.md"
    result = subprocess.run(["chattr", "+i", str(target)], capture_output=True, text=True, check=False) \
        if shutil.which("chattr") else None
    if result is None or result.returncode != 0:
        pytest.skip(f"chattr +i is not available here ({result.stderr.strip() if result else 'no chattr'}): it "
                    "needs root and a filesystem with attributes")
    try:
        with pytest.raises(PudevError, match=r"cannot replace docs/quickstart\.md .*chattr -i"):
            move.apply()
    finally:
        subprocess.run(["chattr", "-i", str(target)], check=True)
    assert move.unmoved()


def _failing_rename(monkeypatch: pytest.MonkeyPatch, at: int) -> None:
    """os.replace fails at the `at`-th staged file's rename (1 = the first), as a file made immutable after
    the checks, or an I/O error, would."""
    replace, seen = os.replace, []

    def failing(source: Any, target: Any, **options: Any) -> None:
        if str(source).endswith(".new-torch"):
            seen.append(source)
            if len(seen) == at:
                raise OSError(errno.EIO, os.strerror(errno.EIO), str(target))
        replace(source, target, **options)
    monkeypatch.setattr(os, "replace", failing)


@pytest.mark.parametrize("at", [1, 3, 6])
def test_a_rename_that_fails_midway_is_finished_by_the_next_run(move: Move, monkeypatch: pytest.MonkeyPatch,
                                                                at: int) -> None:
    with monkeypatch.context() as patch:
        _failing_rename(patch, at)
        with pytest.raises(PudevError) as raised:
            move.apply()
    line = str(raised.value)
    assert JOURNAL in line and "again to finish it" in line and "\n" not in line
    assert (move.root / JOURNAL).exists() and not move.moved()
    said = recover(move.root, also=[move.outside])
    assert "finished the move" in said and move.moved()


def test_a_rename_that_fails_again_on_the_rerun_keeps_the_journal_and_names_the_file(
        move: Move, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patch:
        _failing_rename(patch, 2)
        with pytest.raises(PudevError):
            move.apply()
    journal = json.loads((move.root / JOURNAL).read_text())
    stuck = move.root / journal["renames"][1][1]
    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", lambda source, target, **_: (_ for _ in ()).throw(
            PermissionError(errno.EPERM, "Operation not permitted", str(target))))
        with pytest.raises(PudevError) as raised:
            recover(move.root, also=[move.outside])
    line = str(raised.value)
    assert os.path.relpath(stuck, move.root) in line and "chattr -i" in line and JOURNAL in line
    assert (move.root / JOURNAL).exists()
    recover(move.root, also=[move.outside])
    assert move.moved()


def test_the_journal_names_paths_from_the_checkout_never_a_host_path(move: Move,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patch:
        _failing_rename(patch, 1)
        with pytest.raises(PudevError):
            move.apply()
    journal = json.loads((move.root / JOURNAL).read_text())
    paths = [path for pair in journal["renames"] for path in pair] + journal["removals"]
    assert paths and not any(os.path.isabs(path) or str(move.root.parent) in path for path in paths)
    assert ["../elsewhere/.variants.toml.new-torch", "../elsewhere/variants.toml"] in journal["renames"]


# Runs the apply in a process of its own and SIGKILLs it at a rename: the journal's, or the staged file's
# after N others.
KILLER = """
import os, signal, sys
from pathlib import Path
from pudev.devtools.new_torch.transaction import JOURNAL, changes, swap_in
root, copy, outside, at = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
replace, renamed = os.replace, []
def killing(source, target, **options):
    journal, staged = str(target).endswith(JOURNAL), str(source).endswith(".new-torch")
    if (at == "journal" and journal) or (at != "journal" and staged and len(renamed) == int(at)):
        os.kill(os.getpid(), signal.SIGKILL)
    renamed.extend([source] if staged else [])
    replace(source, target, **options)
os.replace = killing
swap_in(copy, root, changes(copy, root), moved={"docker/variants.toml": outside})
"""


@pytest.mark.parametrize("at", ["journal", "0", "1", "3", "5"])
def test_sigkill_in_the_apply_ends_unmoved_or_fully_moved_after_the_rerun(move: Move, at: str) -> None:
    """Killed as the journal is written (nothing renamed yet: the staged files go), or after N renames (the
    journal finishes the rest). 0.1 s each measured (a Python process of its own)."""
    killed = subprocess.run([sys.executable, "-c", KILLER, str(move.root), str(move.copy), str(move.outside), at],
                            capture_output=True, text=True, timeout=60, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    said = recover(move.root, also=[move.outside])
    if at == "journal":
        staged = len([text for text in MOVE.values() if text is not None]) + 1  # and the --variants-file's
        assert f"removed {staged + 1} file(s)" in said and "staged but never applied" in said and JOURNAL in said
        assert move.unmoved()
    else:
        assert "finished the move" in said and move.moved()


def test_a_damaged_journal_is_one_line_naming_it_and_the_fix(move: Move) -> None:
    (move.root / JOURNAL).write_text('{"renames": [')
    with pytest.raises(PudevError) as raised:
        recover(move.root)
    assert JOURNAL in str(raised.value) and "git" in str(raised.value) and "\n" not in str(raised.value)
