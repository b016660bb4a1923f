"""All or nothing: the move is made in a scratch copy of the files it may touch, and the tree changes
only after every step there succeeded, each file replaced whole (rename) and the removed ones unlinked
last. A failed step leaves the tree as it was, so a rerun starts from the same place and finishes."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pudev.common.errors import PudevError

# What a move may read or write, relative to the checkout: the matrix, stand-ins and locks, the pages with
# generated tables (and the benchmarks they read), the changelog, and the files that name latest's image.
TOUCHED = ("docker", "requirements", "docs", "benchmarks", "README.md", "README.zh-CN.md", "CHANGELOG.md",
           "pyproject.toml", "docker-compose.yml", ".devcontainer")


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


def swap_in(copy: Path, root: Path, changed: dict[str, bool], *, moved: dict[str, Path] | None = None) -> None:
    """Each written file replaced whole (a rename within its folder), then the removed ones unlinked. `moved`:
    a file written elsewhere than its place in the copy (the matrix a --variants-file named)."""
    for name, written in changed.items():
        if written:
            target = (moved or {}).get(name, root / name)
            target.parent.mkdir(parents=True, exist_ok=True)
            staged = target.with_name(f".{target.name}.new-torch")
            shutil.copyfile(copy / name, staged)
            os.replace(staged, target)
    for name, written in changed.items():
        if not written:
            (root / name).unlink()


def pudev_in(copy: Path, *args: str) -> str:
    """`pudev ARGS` run on the copy, as a maintainer would run it by hand on the checkout."""
    result = subprocess.run([sys.executable, "-m", "pudev.cli", *args], cwd=copy, capture_output=True, text=True,
                            env={**os.environ, "PUDEV_ROOT": str(copy)}, check=False, timeout=1800)
    if result.returncode != 0:
        said = (result.stderr.strip().splitlines() or ["no output"])[-1].removeprefix("pudev: error: ")
        raise PudevError(f"`pudev {' '.join(args)}`: {said}")
    return result.stdout
