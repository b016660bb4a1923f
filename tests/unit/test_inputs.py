"""Every file input, checked: the stand-in file and the locks (the variant file and
the CA bundle have their own tests). Each failure is one line that names the
file, the flag it came from, and the fix; no traceback, a non-zero exit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pudev.common.errors import PudevError
from pudev.common.inputs import InputFile
from pudev.config.profiles import load_profile
from pudev.config.selection import Selection, resolve
from pudev.paths import REPO_ROOT

CASES = [(None, "not found"), (b"", "is empty"), (b"x = \"\xff\"\n", "is not UTF-8 text"),
         (b"[profiles\n", "is not valid TOML"), ("dir", "is a directory, not a file")]


def _write(path: Path, content: bytes | str | None) -> None:
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)


@pytest.mark.parametrize(("content", "expected"), CASES)
def test_unusable_stand_in_files(tmp_path: Path, content: bytes | str | None, expected: str) -> None:
    path = tmp_path / "standins.toml"
    _write(path, content)
    source = InputFile(path, "stand-in file", "--profile", "restore docker/standins/standins.toml from git")
    with pytest.raises(PudevError) as caught:
        load_profile("local", source)
    message = str(caught.value)
    assert message.startswith(f"{path} (stand-in file, from --profile): {expected}") and "\n" not in message


def test_unknown_profile_names_the_flag_and_the_choices() -> None:
    with pytest.raises(PudevError, match=r"^--profile nope: unknown profile; valid profiles are local"):
        load_profile("nope")


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """The files `pudev plan` reads, in a copy the test may break (PUDEV_ROOT points pudev at it)."""
    root = tmp_path / "repo"
    for relative in ("docker", "requirements"):
        shutil.copytree(REPO_ROOT / relative, root / relative)
    return root


def _plan(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PUDEV_ROOT": str(root)}
    return subprocess.run([sys.executable, "-m", "pudev.cli", "plan", "--profile", "local", "--no-ca-bundle", *args],
                          capture_output=True, text=True, env=env, timeout=60, check=False)


@pytest.mark.parametrize(("breakage", "expected"), [
    ("missing", "not found; run `pudev lock --profile local`"),
    ("empty", "is empty; run `pudev lock --profile local`"),
    ("unhashed", "has no --hash pins, so the build could not check what it downloads; run `pudev lock --profile "
                 "local`"),
    ("no pins", "pins no package (no NAME==VERSION lines); run `pudev lock --profile local`"),
])
def test_a_lock_that_cannot_be_built_is_refused_before_planning(repo_copy: Path, breakage: str,
                                                                 expected: str) -> None:
    (variant,) = resolve(Selection(profile="local")).variants
    lock = repo_copy / "requirements/lock" / f"{variant.lock}.txt"
    text = lock.read_text()
    if breakage == "missing":
        lock.unlink()
    elif breakage == "empty":
        lock.write_text("")
    elif breakage == "unhashed":
        lock.write_text("\n".join(line for line in text.splitlines() if "--hash" not in line).replace("\\", ""))
    else:
        lock.write_text("# nothing pinned\n")
    result = _plan(repo_copy)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith(f"pudev: error: {lock} (lock, from variant {variant.name}'s lock")
    assert line.endswith(expected)


def test_a_broken_stand_in_file_is_one_line_from_the_command_line(repo_copy: Path) -> None:
    (repo_copy / "docker/standins/standins.toml").write_bytes(b"\xff\xfe")
    result = _plan(repo_copy)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (f"pudev: error: {repo_copy}/docker/standins/standins.toml (stand-in file, from "
                                     "--profile): is not UTF-8 text (byte 0); restore docker/standins/standins.toml "
                                     "from git")
