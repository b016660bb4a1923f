"""docker/steps/capture-written.py, which moves what a stage's step wrote under one directory for the final
stage's COPY: exactly what changed goes, the directories above it are made again as they were (owner,
mode, times), and what the step left alone stays. Run on a tree of its own (the build walks /)."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from build_steps import load_step

from pudev.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "docker/steps/capture-written.py"


@pytest.fixture(scope="module")
def capture() -> ModuleType:
    return load_step("capture-written.py")


def _tree(root: Path) -> dict[str, tuple[str, int]]:
    """Every entry under `root`: its kind and permission bits, or a link's target."""
    found: dict[str, tuple[str, int]] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = ("link:" + os.readlink(path), 0)
        else:
            found[name] = ("dir" if path.is_dir() else "file:" + path.read_text(),
                           stat.S_IMODE(path.lstat().st_mode))
    return found


def test_what_the_step_wrote_moves_and_the_rest_stays(capture: ModuleType, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "usr/lib/python3/site").mkdir(parents=True)
    (root / "usr/lib/python3/site/torch.py").write_text("base")
    (root / "root").mkdir(mode=0o700)
    (root / "root").chmod(0o700)
    (root / "var/cache/apt").mkdir(parents=True)
    old_mtime = 1_600_000_000
    os.utime(root / "usr/lib/python3", (old_mtime, old_mtime))
    time.sleep(0.01)
    since = time.time_ns()
    time.sleep(0.01)
    # The step: a new package directory, a changed base file's neighbour, a link, a dotfile in a 0700 home,
    # and something in a mount the walk leaves alone.
    (root / "usr/lib/python3/site/numpy").mkdir()
    (root / "usr/lib/python3/site/numpy/__init__.py").write_text("numpy")
    (root / "usr/lib/python3/site/numpy/core.so").write_text("elf")
    (root / "usr/lib/python3/site/numpy/core.so").chmod(0o755)
    (root / "usr/lib/python3/site/numpy.pth").symlink_to("numpy/__init__.py")
    (root / "root/.zshrc").write_text("rc")
    (root / "var/cache/apt/g++.deb").write_text("deb")
    os.utime(root / "usr/lib/python3", (old_mtime, old_mtime))  # untouched by the step: keeps its time
    staged = tmp_path / "staged"
    staged.mkdir()

    entries = capture.written(str(root), since, {str(root / "var/cache/apt")})
    capture.stage(entries, str(root), str(staged))

    assert _tree(staged) == {
        "root": ("dir", 0o700), "root/.zshrc": ("file:rc", 0o644),
        "usr": ("dir", 0o755), "usr/lib": ("dir", 0o755), "usr/lib/python3": ("dir", 0o755),
        "usr/lib/python3/site": ("dir", 0o755), "usr/lib/python3/site/numpy": ("dir", 0o755),
        "usr/lib/python3/site/numpy/__init__.py": ("file:numpy", 0o644),
        "usr/lib/python3/site/numpy/core.so": ("file:elf", 0o755),
        "usr/lib/python3/site/numpy.pth": ("link:numpy/__init__.py", 0),
    }
    assert _tree(root) == {
        "root": ("dir", 0o700), "usr": ("dir", 0o755), "usr/lib": ("dir", 0o755),
        "usr/lib/python3": ("dir", 0o755), "usr/lib/python3/site": ("dir", 0o755),
        "usr/lib/python3/site/numpy": ("dir", 0o755), "usr/lib/python3/site/torch.py": ("file:base", 0o644),
        "var": ("dir", 0o755), "var/cache": ("dir", 0o755), "var/cache/apt": ("dir", 0o755),
        "var/cache/apt/g++.deb": ("file:deb", 0o644),
    }
    # A directory above what was written comes back with its own time, so the COPY changes nothing there.
    assert (staged / "usr/lib/python3").stat().st_mtime == old_mtime


def test_a_step_that_fails_stages_nothing(tmp_path: Path) -> None:
    import subprocess
    staged = tmp_path / "staged" / "x"
    done = subprocess.run([sys.executable, str(SCRIPT), str(staged), "sh", "-c", "exit 7"], capture_output=True,
                          text=True, check=False, cwd=tmp_path)
    assert done.returncode == 7 and not staged.exists()


def test_written_python_is_byte_compiled_from_the_same_walk_and_moves_with_its_source(
        capture: ModuleType, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "site").mkdir(parents=True)
    (root / "site/old.py").write_text("OLD = 1\n")  # the base's: neither compiled nor moved
    since = time.time_ns()
    time.sleep(0.01)
    (root / "site/pkg").mkdir()
    (root / "site/pkg/__init__.py").write_text("VALUE = 42\n")
    (root / "site/pkg/data.txt").write_text("not python")
    staged = tmp_path / "staged"
    staged.mkdir()

    entries = capture.written(str(root), since, set())
    compiled = capture.compile_python(entries, None)
    capture.stage(sorted(entries + compiled, key=lambda item: item[0].count("/")), str(root), str(staged))

    pyc = Path(importlib.util.cache_from_source(str(staged / "site/pkg/__init__.py")))
    assert [path for path, _ in compiled] == [importlib.util.cache_from_source(str(root / "site/pkg/__init__.py"))]
    assert pyc.is_file() and pyc.stat().st_size > 16
    assert not [path for path in (root / "site").rglob("*") if path.is_file() and path.name != "old.py"]
    # A .pyc is valid for its source's size and time, which the move keeps.
    source = (staged / "site/pkg/__init__.py").stat()
    header = pyc.read_bytes()[:16]
    assert int.from_bytes(header[8:12], "little") == int(source.st_mtime) & 0xFFFFFFFF
    assert int.from_bytes(header[12:16], "little") == source.st_size
