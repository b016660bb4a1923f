"""scripts/current-engine.sh's refusals and its failed first build, against recording stand-ins for the
docker client and debootstrap: each a one-line reason with a non-zero exit, and nothing left behind."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts/current-engine.sh"


def _fake(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _run(tmp_path: Path, *args: str, docker_info_ok: bool = True, prefix: tuple[str, ...] = ()
         ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    calls = tmp_path / "calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    # info answers (or not); image inspect finds no engine image; everything else is recorded.
    docker = _fake(bin_dir / "docker", f'echo "docker $*" >> {calls}\n'
                                       f'case $1 in info) exit {0 if docker_info_ok else 1} ;; image) exit 1 ;; esac')
    # A debootstrap that writes into its target, then fails, as one cut off midway would.
    _fake(bin_dir / "debootstrap", f'echo "debootstrap $*" >> {calls}\neval "target=\\${{$(($# - 1))}}"\n'
                                   'touch "$target/half-written"\nexit 1')
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {**{key: value for key, value in os.environ.items() if not key.startswith("PUDEV_")},
           "PATH": f"{bin_dir}:{os.environ['PATH']}", "PUDEV_DOCKER": str(docker), "TMPDIR": str(tmp_path / "tmp"),
           "PUDEV_CURRENT_ENGINE_DIR": str(tmp_path / "state"), "PUDEV_DEBIAN_ARCHIVE": "http://127.0.0.1:9/debian"}
    # On stdin: another user cannot open a checkout in a private folder (release day's copy of it is one).
    with SCRIPT.open() as script:
        result = subprocess.run([*prefix, "sh", "-s", "--", *args], stdin=script, capture_output=True, text=True,
                                env=env, check=False, timeout=60)
    return result, calls.read_text().splitlines() if calls.exists() else []


def test_a_wrong_word_is_one_line_naming_the_three(tmp_path: Path) -> None:
    result, calls = _run(tmp_path, "start")
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "'start'" in result.stderr and "up|run|down|remove" in result.stderr
    assert calls == []  # refused before it asks the engine anything


def test_run_without_a_command_says_what_it_takes(tmp_path: Path) -> None:
    result, calls = _run(tmp_path, "run")
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "run needs a command" in result.stderr and "CMD" in result.stderr
    assert calls == []


def test_without_a_host_engine_it_says_how_to_start_one(tmp_path: Path) -> None:
    result, _ = _run(tmp_path, "up", docker_info_ok=False)
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "host-setup.sh engine" in result.stderr


def test_a_failed_first_build_keeps_nothing(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the script stops a non-root user before it builds anything (the next test)")
    result, calls = _run(tmp_path, "up")
    assert result.returncode != 0
    assert "debootstrap of sid failed" in result.stderr.splitlines()[-1], result.stderr
    assert any(call.startswith("debootstrap ") and "sid" in call for call in calls), calls
    assert not [call for call in calls if call.startswith("docker import")], calls
    assert list((tmp_path / "tmp").iterdir()) == []  # the half-written root is gone
    assert not (tmp_path / "state").exists()


def test_it_needs_root(tmp_path: Path) -> None:
    setpriv = shutil.which("setpriv")
    if os.geteuid() == 0 and setpriv is None:
        pytest.skip("needs setpriv to run the script as another user")
    prefix = (setpriv, "--reuid=65534", "--regid=65534", "--clear-groups") if os.geteuid() == 0 and setpriv else ()
    tmp_path.chmod(0o777)
    result, calls = _run(tmp_path, "down", prefix=prefix)
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "needs root" in result.stderr and "sudo" in result.stderr
    assert calls == []
