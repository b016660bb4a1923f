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


MOUNTINFO = """\
22 1 0:21 / / rw,relatime - ext4 /dev/vda rw
612 22 0:52 / / rw,relatime - {top} overlay rw,lowerdir=/l1:/l2,upperdir=/u,workdir=/w
613 612 0:53 / /proc rw,nosuid - proc proc rw
614 612 0:54 / /tmp rw - tmpfs tmpfs rw
"""


@pytest.mark.parametrize(("top", "expected"), [("overlay", True), ("ext4", False), ("fuse.fuse-overlayfs", False)])
def test_only_an_overlayfs_root_counts_as_copied_up(capture: ModuleType, tmp_path: Path, top: str,
                                                    expected: bool) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(MOUNTINFO.format(top=top))  # the topmost mount on / decides, not the one below it
    assert capture.copies_up("/", str(mountinfo)) is expected
    assert capture.copies_up("/tmp", str(mountinfo)) is False


def _step_tree(root: Path, *, copy_up: bool) -> int:
    """A base with an untouched subtree, then a step that writes deep under another; with copy_up, every
    directory above what it wrote gets a new ctime, as overlayfs gives the directories it copies up."""
    (root / "usr/lib/python3/site").mkdir(parents=True)
    for index in range(20):
        (root / f"usr/share/doc/package{index}").mkdir(parents=True)
        (root / f"usr/share/doc/package{index}/README").write_text("base")
    time.sleep(0.01)
    since = time.time_ns()
    time.sleep(0.01)
    (root / "usr/lib/python3/site/numpy").mkdir()
    (root / "usr/lib/python3/site/numpy/__init__.py").write_text("numpy")
    if copy_up:
        for directory in (root / "usr/lib/python3", root / "usr/lib", root / "usr"):
            directory.chmod(0o755)  # any change of attributes sets the ctime, as a copy-up does
    return since


def test_the_walk_skips_what_overlayfs_never_copied_up(capture: ModuleType, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    since = _step_tree(root, copy_up=True)
    full = capture.written(str(root), since, set())
    entered: list[str] = []
    real_scandir = os.scandir

    def recording_scandir(path: str) -> object:
        entered.append(path)
        return real_scandir(path)

    monkeypatch.setattr(capture.os, "scandir", recording_scandir)
    pruned = capture.written(str(root), since, set(), copied_up_only=True)
    assert [path for path, _ in pruned] == [path for path, _ in full]
    assert str(root / "usr/lib/python3/site/numpy/__init__.py") in [path for path, _ in pruned]
    assert not [path for path in entered if "/usr/share" in path]  # the 21 untouched directories: never entered


def test_without_copy_up_only_the_full_walk_finds_everything(capture: ModuleType, tmp_path: Path) -> None:
    """Why the pruned walk is kept to overlayfs: a snapshot that copies the tree leaves /usr's ctime old."""
    root = tmp_path / "root"
    since = _step_tree(root, copy_up=False)
    written = str(root / "usr/lib/python3/site/numpy/__init__.py")
    assert written in [path for path, _ in capture.written(str(root), since, set())]
    assert written not in [path for path, _ in capture.written(str(root), since, set(), copied_up_only=True)]
