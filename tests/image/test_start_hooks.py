"""Start-up hooks through the entrypoint, as `docker run IMAGE COMMAND` starts them: the system
directory (PUDEV_START_HOOKS_DIR, so the test brings its own), then ~/.config/pudev/start.d,
in C order, logged, what a sourced hook exports reaching the command, and a failing hook
stopping the start before the command. (tests/e2e: the root start that drops to the user
between the two sets.)"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

PREFIX = "pudev-entrypoint: "


def _hook(folder: Path, name: str, text: str, *, executable: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    path.chmod(0o755 if executable else 0o644)
    return path


def _entrypoint(system: Path, home: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PUDEV_START_HOOKS_DIR": str(system), "HOME": str(home)}
    env.pop("PUDEV_SKIP_START_HOOKS", None)
    return subprocess.run(["pudev-entrypoint", *command], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)


@pytest.fixture
def system(tmp_path: Path) -> Path:
    return tmp_path / "start.d"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def test_the_image_ships_an_empty_root_owned_hook_directory() -> None:
    folder = Path("/etc/pudev/start.d")
    info = folder.stat()
    assert stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and not info.st_mode & 0o022
    assert list(folder.iterdir()) == []


def test_hooks_run_in_order_logged_and_their_exports_reach_the_command(system: Path, home: Path) -> None:
    _hook(system, "20-env.sh", 'export FROM_HOOK="set by a hook"\nexport ORDER="${ORDER:-}20 "\n')
    _hook(system, "10-first.sh", 'export ORDER="${ORDER:-}10 "\n')
    _hook(system, "15-tool", '#!/usr/bin/env bash\necho "executable saw ORDER=$ORDER as $(id -u)"\n', executable=True)
    _hook(system, "30-README", "notes, not a hook\n")
    user = home / ".config/pudev/start.d"
    _hook(user, "10-mine.sh", 'export MINE="after ${ORDER}in $HOME"\n')
    result = _entrypoint(system, home, ["sh", "-c", 'echo "$FROM_HOOK|$ORDER|$MINE"'])
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"executable saw ORDER=10  as {os.getuid()}",
                                          f"set by a hook|10 20 |after 10 20 in {home}"]
    assert result.stderr.splitlines() == [
        f"{PREFIX}sourcing start hook {system}/10-first.sh", f"{PREFIX}running start hook {system}/15-tool",
        f"{PREFIX}sourcing start hook {system}/20-env.sh",
        f"{PREFIX}ignoring start hook {system}/30-README: neither *.sh nor executable",
        f"{PREFIX}sourcing start hook {user}/10-mine.sh"]


FAILURES = {  # name, text, executable, exit status
    "sourced, a failing command": ("10-bad.sh", "echo partly ran\nfalse\necho went on\n", False, 1),
    "executable, exit 3": ("10-bad", "#!/bin/sh\nexit 3\n", True, 3),
}


@pytest.mark.parametrize("case", FAILURES)
def test_a_failing_hook_stops_the_start(system: Path, home: Path, tmp_path: Path, case: str) -> None:
    name, text, executable, code = FAILURES[case]
    bad = _hook(system, name, text, executable=executable)
    _hook(system, "20-later.sh", "echo later hook\n")
    _hook(home / ".config/pudev/start.d", "10.sh", "echo user hook\n")
    marker = tmp_path / "the-command-ran"
    result = _entrypoint(system, home, ["touch", str(marker)])
    assert result.returncode == code, result.stderr
    assert not marker.exists()
    assert not any(text in result.stdout for text in ("went on", "later hook", "user hook")), result.stdout
    failed = [line for line in result.stderr.splitlines() if "failed" in line]
    assert failed == [f"{PREFIX}start hook {bad} failed (exit {code}); fix or remove it"]
    assert result.stderr.splitlines()[-1] == failed[0]


def test_no_hooks_and_skipped_hooks_are_silent(system: Path, home: Path) -> None:
    system.mkdir()
    empty = _entrypoint(system, home, ["echo", "ran"])
    _hook(system, "10.sh", "exit 1\n")
    skipped = subprocess.run(["pudev-entrypoint", "echo", "ran"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PUDEV_START_HOOKS_DIR": str(system), "HOME": str(home),
                                  "PUDEV_SKIP_START_HOOKS": "1"}, check=False)
    for result in (empty, skipped):
        assert (result.returncode, result.stdout, result.stderr) == (0, "ran\n", "")
