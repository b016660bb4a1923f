"""All or nothing: the move is made in a scratch copy of the files it may touch, and the tree changes
only after every step there succeeded. Applying it is recoverable: every file is first staged beside its
target and every target checked (nothing in the tree changes yet, and any failure removes what was
staged), then a journal at the checkout root lists the renames and removals, which are done and the
journal removed last. A run that finds the journal finishes it first, so an apply cut short (an error,
Ctrl-C, SIGKILL) ends fully moved, never half. Nothing is fsynced: a power cut may still lose what the
page cache held."""

from __future__ import annotations

import errno
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pudev.common.errors import PudevError

# What a move may read or write, relative to the checkout: the matrix, stand-ins and locks, the pages with
# generated tables (and the benchmarks they read), the changelog, and the files that name latest's image.
TOUCHED = ("docker", "requirements", "docs", "benchmarks", "README.md", "README.zh-CN.md", "CHANGELOG.md",
           "pyproject.toml", "docker-compose.yml", ".devcontainer")
# The apply under way: present only between the first rename and the last removal (.gitignore lists it).
JOURNAL = ".new-torch-apply.json"
AGAIN = "then run `pudev new-torch` again"


@contextmanager
def scratch_copy(root: Path) -> Iterator[Path]:
    """A copy of what a move touches under `root`, removed afterwards whatever happened."""
    with tempfile.TemporaryDirectory(prefix="pudev-new-torch-") as folder:
        copy = Path(folder) / "tree"
        copy.mkdir()
        for name in TOUCHED:
            source = root / name
            if source.is_dir():
                shutil.copytree(source, copy / name, symlinks=True)
            elif source.exists():
                shutil.copy2(source, copy / name)
        yield copy


def step(name: str, action: Callable[[], object]) -> None:
    """Run one step of the move; a failure names the step and says the tree is unchanged."""
    try:
        action()
    except PudevError as error:
        raise PudevError(f"new-torch stopped at the {name} step, the tree is unchanged: {error}") from None


def _files(root: Path) -> set[str]:
    found = set()
    for name in TOUCHED:
        path = root / name
        if path.is_file():
            found.add(name)
        elif path.is_dir():
            found |= {str(item.relative_to(root)) for item in path.rglob("*") if item.is_file()}
    return found


def changes(copy: Path, root: Path) -> dict[str, bool]:
    """relative path -> True (written) or False (removed): what the copy differs from the tree in."""
    before, after = _files(root), _files(copy)
    written = {name: True for name in sorted(after)
               if name not in before or not filecmp.cmp(copy / name, root / name, shallow=False)}
    return {**written, **{name: False for name in sorted(before - after)}}


def staged_path(target: Path) -> Path:
    """Where a file waits beside its target: the same folder, so the final rename cannot cross disks."""
    return target.with_name(f".{target.name}.new-torch")


def _shown(path: Path, root: Path) -> str:
    """A path as the user knows it: relative to the checkout inside it, else as the flag named it."""
    if path.resolve() == root.resolve():
        return "the checkout's folder"
    return os.path.relpath(path, root) if path.resolve().is_relative_to(root.resolve()) else str(path)


def _fix(error: OSError, thing: str) -> str:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"free space on the disk that holds {thing}"
    if error.errno == errno.EROFS:
        return f"remount the filesystem that holds {thing} read-write"
    return f"make {thing} writable (chattr -i / chmod u+w)"


def swap_in(copy: Path, root: Path, changed: dict[str, bool], *, moved: dict[str, Path] | None = None) -> None:
    """Each written file replaced whole (a rename within its folder), then the removed ones unlinked. `moved`:
    a file written elsewhere than its place in the copy (the matrix a --variants-file named). Nothing in the
    tree changes until every file is staged and every target checked; from then on the journal holds the
    rest, so a failure or a kill is finished by the next run (`recover`)."""
    targets = {name: (moved or {}).get(name, root / name) for name in changed}
    staged: list[Path] = []  # removed again if anything fails before the journal exists
    created: list[Path] = []
    doing, subject = "", root  # what was being done, and what the fix is about
    try:
        for name, target in targets.items():
            if target.exists():
                # An immutable file, or one on a read-only disk, can be neither replaced nor removed.
                doing, subject = f"replace {_shown(target, root)}", target
                open(target, "r+b").close()
            if not changed[name]:
                doing, subject = f"remove {_shown(target, root)}", target.parent
                if not os.access(target.parent, os.W_OK):  # unlinking needs its folder writable
                    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
                continue
            # A folder that refuses new files, or a full disk, fails here, before any target is touched.
            doing, subject = f"stage {_shown(target, root)} beside it as {staged_path(target).name}", target.parent
            for folder in reversed([folder for folder in (target.parent, *target.parent.parents)
                                    if not folder.exists()]):
                folder.mkdir()
                created.append(folder)
            staged.append(staged_path(target))
            with open(copy / name, "rb") as source, open(staged[-1], "wb") as out:
                shutil.copyfileobj(source, out)
            shutil.copymode(target if target.exists() else copy / name, staged[-1])
        doing, subject = f"write {JOURNAL}", root
        renames = [[_relative(staged_path(targets[name]), root), _relative(targets[name], root)]
                   for name, written in changed.items() if written]
        removals = [_relative(targets[name], root) for name, written in changed.items() if not written]
        temporary = root / f"{JOURNAL}.tmp"
        temporary.write_text(json.dumps({"renames": renames, "removals": removals}, indent=1) + "\n")
        os.replace(temporary, root / JOURNAL)  # the journal appears whole or not at all: the commit point
    except BaseException as error:  # Ctrl-C too: whatever was staged goes, the tree is as it was
        for path in (*staged, root / f"{JOURNAL}.tmp"):
            path.unlink(missing_ok=True)
        for folder in reversed(created):
            shutil.rmtree(folder, ignore_errors=True)
        if not isinstance(error, OSError):
            raise
        raise PudevError(f"new-torch cannot {doing} ({error.strerror or error}): the tree is unchanged; "
                         f"{_fix(error, _shown(subject, root))}, {AGAIN}") from None
    _finish(root, renames, removals)


def _relative(path: Path, root: Path) -> str:
    """The journal names paths from the checkout (../ for a --variants-file outside it), never a host path."""
    return os.path.relpath(path, root)


def _finish(root: Path, renames: list[list[str]], removals: list[str]) -> int:
    """Do what the journal lists, then remove it. Each step may run twice: a staged file that is gone was
    renamed already. The number of files renamed or removed."""
    done, path = 0, root / JOURNAL
    try:
        for staged, target in renames:
            path = root / target
            if (root / staged).exists():
                os.replace(root / staged, path)
                done += 1
        for target in removals:
            path = root / target
            if path.exists():
                path.unlink()
                done += 1
        path = root / JOURNAL
        path.unlink()
    except OSError as error:
        thing = _shown(path, root)
        raise PudevError(f"new-torch could not finish applying the move at {thing} ({error.strerror or error}); "
                         f"{JOURNAL} holds the rest: {_fix(error, thing)}, {AGAIN} to finish it") from None
    return done


def recover(root: Path, *, also: Iterable[Path] = ()) -> str:
    """Run before a new-torch run reads the tree: finish the apply its journal says was cut short, else remove
    what an apply staged before it stopped (never committed: the tree did not change). `also`: targets
    outside the tree (a --variants-file). The line to print, "" when nothing was left over."""
    path = root / JOURNAL
    if path.exists():
        try:
            journal = json.loads(path.read_text())
            renames = [[str(staged), str(target)] for staged, target in journal["renames"]]
            removals = [str(target) for target in journal["removals"]]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise PudevError(f"{JOURNAL}: not a journal new-torch can finish ({error}); restore the files it "
                             f"names with git and remove it, {AGAIN}") from None
        done = _finish(root, renames, removals)
        return (f"new-torch finished the move an earlier run left half-applied ({done} of "
                f"{len(renames) + len(removals)} files were left; {JOURNAL} removed)")
    strays = [root / f"{JOURNAL}.tmp", *(staged_path(target) for target in also)]
    for name in TOUCHED:
        strays += (root / name).rglob(".*.new-torch") if (root / name).is_dir() else [staged_path(root / name)]
    removed = [stray for stray in strays if stray.is_file()]
    for stray in removed:
        try:
            stray.unlink()
            folder = stray.parent
            while folder != root and folder.is_relative_to(root) and not any(folder.iterdir()):
                folder.rmdir()  # made by the staging, for a new file
                folder = folder.parent
        except OSError as error:
            thing = _shown(stray, root)
            raise PudevError(f"new-torch cannot remove {thing}, left by a run that stopped before applying "
                             f"({error.strerror or error}): {_fix(error, thing)}, {AGAIN}") from None
    if not removed:
        return ""
    named = ", ".join(_shown(stray, root) for stray in removed[:3]) + (f" and {len(removed) - 3} more"
                                                                        if len(removed) > 3 else "")
    return f"new-torch removed {len(removed)} file(s) an earlier run staged but never applied (the tree was " \
           f"unchanged): {named}"


def pudev_in(copy: Path, *args: str) -> str:
    """`pudev ARGS` run on the copy, as a maintainer would run it by hand on the checkout."""
    result = subprocess.run([sys.executable, "-m", "pudev.cli", *args], cwd=copy, capture_output=True, text=True,
                            env={**os.environ, "PUDEV_ROOT": str(copy)}, check=False, timeout=1800)
    if result.returncode != 0:
        said = (result.stderr.strip().splitlines() or ["no output"])[-1].removeprefix("pudev: error: ")
        raise PudevError(f"`pudev {' '.join(args)}`: {said}")
    return result.stdout
