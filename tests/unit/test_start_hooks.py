"""Start-up hooks (docker/rootfs/usr/local/bin/pudev-run-hooks) run on the host with sh and
bash: order, what they export, what is ignored, the user's directory after the system's,
and a failing hook stopping the start. tests/image/test_start_hooks.py runs them through
the entrypoint in the image; tests/e2e the root start that drops to the user between them."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

BIN = REPO_ROOT / "docker/rootfs/usr/local/bin"
RUN_HOOKS = str(BIN / "pudev-run-hooks")
SHELLS = [shell for shell in ("sh", "bash") if shutil.which(shell)]
PREFIX = "pudev-entrypoint: "
Start = Callable[..., subprocess.CompletedProcess[str]]


def _hook(folder: Path, name: str, text: str, *, executable: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    path.chmod(0o755 if executable else 0o644)
    return path


@pytest.fixture(scope="session")
def locale(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A locale whose collation is not C's (b before B), so bash would sort the hooks its way
    unless pudev-run-hooks asks for C; built with localedef where the host has none."""
    folder = tmp_path_factory.mktemp("locale")
    made = shutil.which("localedef") and subprocess.run(
        ["localedef", "-i", "en_US", "-f", "UTF-8", str(folder / "en_US.UTF-8")], capture_output=True,
        timeout=120, check=False).returncode == 0
    return {"LOCPATH": str(folder), "LC_ALL": "en_US.UTF-8"} if made else {"LC_ALL": "C.UTF-8"}


@pytest.fixture
def start(locale: dict[str, str]) -> Start:
    def run(shell: str, system: Path, home: Path, command: list[str], **env: str) -> subprocess.CompletedProcess[str]:
        """What the entrypoint chains: the system hooks, then the user's, then the command."""
        environ = {"PATH": os.environ["PATH"], "HOME": str(home), "PUDEV_START_HOOKS_DIR": str(system),
                   **locale, **env}
        return subprocess.run([shell, RUN_HOOKS, "system", shell, RUN_HOOKS, "user", *command], env=environ,
                              capture_output=True, text=True, timeout=30, check=False)

    return run


@pytest.fixture
def system(tmp_path: Path) -> Path:
    return tmp_path / "start.d"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@pytest.mark.parametrize("shell", SHELLS)
def test_hooks_run_in_order_and_their_exports_reach_the_command(shell: str, system: Path, home: Path,
                                                                 start: Start) -> None:
    for name in ("b.sh", "B.sh", "10.sh", "2.sh"):  # C order: 10, 2, B, b (a locale's would be 10, 2, b, B)
        _hook(system, name, f'export ORDER="${{ORDER:-}}{name} "\n')
    _hook(system, "3-tool", '#!/bin/sh\necho "tool sees ORDER=$ORDER"\n', executable=True)
    _hook(system, "4-notes.txt", "not a hook\n")
    _hook(system, ".hidden.sh", "exit 9\n")  # dot files are skipped
    (system / "5-folder.sh").mkdir()
    user = home / ".config/pudev/start.d"
    _hook(user, "1-mine.sh", 'export MINE="user sees ORDER=$ORDER"\n')
    result = start(shell, system, home, ["sh", "-c", 'echo "$ORDER|$MINE"'])
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["tool sees ORDER=10.sh 2.sh ", "10.sh 2.sh B.sh b.sh |user sees ORDER=10.sh "
                                          "2.sh B.sh b.sh "]
    assert result.stderr.splitlines() == [
        f"{PREFIX}sourcing start hook {system}/10.sh", f"{PREFIX}sourcing start hook {system}/2.sh",
        f"{PREFIX}running start hook {system}/3-tool",
        f"{PREFIX}ignoring start hook {system}/4-notes.txt: neither *.sh nor executable",
        f"{PREFIX}ignoring start hook {system}/5-folder.sh: not a file",
        f"{PREFIX}sourcing start hook {system}/B.sh", f"{PREFIX}sourcing start hook {system}/b.sh",
        f"{PREFIX}sourcing start hook {user}/1-mine.sh"]


FAILURES = {
    "sourced, a failing command": ("10-bad.sh", "false\necho still going\n", False, 1, "exit 1"),
    "sourced, return 3": ("10-bad.sh", "return 3\n", False, 3, "exit 3"),
    "sourced, exit 4": ("10-bad.sh", "exit 4\n", False, 4, "exit 4"),
    "sourced, exit 0": ("10-bad.sh", "exit 0\n", False, 1, "exit 0, which ends the start when sourced: use return"),
    "sourced, set +e then failing last": ("10-bad.sh", "set +e\nfalse\n", False, 1, "exit 1"),
    "executable, exit 7": ("10-bad", "#!/bin/sh\nexit 7\n", True, 7, "exit 7"),
}


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("case", FAILURES)
def test_a_failing_hook_stops_the_start(shell: str, case: str, tmp_path: Path, start: Start) -> None:
    name, text, executable, code, why = FAILURES[case]
    system, home = tmp_path / "start.d", tmp_path / "home"
    bad = _hook(system, name, text, executable=executable)
    _hook(system, "20-later.sh", "echo later hook ran\n")
    _hook(home / ".config/pudev/start.d", "1.sh", "echo user hook ran\n")
    marker = tmp_path / "command-ran"
    result = start(shell, system, home, ["touch", str(marker)])
    assert result.returncode == code, result.stderr
    output = result.stdout + result.stderr
    assert not marker.exists() and not any(word in output for word in ("later hook", "user hook", "still going"))
    failed = [line for line in result.stderr.splitlines() if "failed" in line]
    assert failed == [f"{PREFIX}start hook {bad} failed ({why}); fix or remove it"]
    assert result.stderr.splitlines()[-1] == failed[0]


@pytest.mark.parametrize("shell", SHELLS)
def test_no_hooks_is_silent(shell: str, system: Path, home: Path, start: Start) -> None:
    missing = start(shell, system, home, ["echo", "ran"])
    system.mkdir()
    empty = start(shell, system, home, ["echo", "ran"])
    for result in (missing, empty):
        assert (result.returncode, result.stdout, result.stderr) == (0, "ran\n", "")


def test_skipping_them(system: Path, home: Path, start: Start) -> None:
    _hook(system, "10.sh", "exit 5\n")
    result = start("sh", system, home, ["echo", "ran"], PUDEV_SKIP_START_HOOKS="1")
    assert (result.returncode, result.stdout, result.stderr) == (0, "ran\n", "")


def test_the_locale_is_left_as_it_was(system: Path, home: Path, start: Start, locale: dict[str, str]) -> None:
    _hook(system, "10.sh", "true\n")
    kept = start("sh", system, home, ["sh", "-c", 'echo "${LC_ALL-unset}"'])
    environ = {"PATH": os.environ["PATH"], "HOME": str(home), "PUDEV_START_HOOKS_DIR": str(system)}
    unset = subprocess.run(["sh", RUN_HOOKS, "system", "sh", "-c", 'echo "${LC_ALL-unset}"'], env=environ,
                           capture_output=True, text=True, timeout=30, check=True)
    assert (kept.stdout, unset.stdout) == (f"{locale['LC_ALL']}\n", "unset\n")


@pytest.mark.parametrize(("env", "expected"), [
    ({"PUDEV_SKIP_START_HOOKS": "yes"},
     "PUDEV_SKIP_START_HOOKS='yes' is not usable: expected 1 (skip the start hooks) or 0 (run them, the default)"),
    ({"PUDEV_START_HOOKS_DIR": "/no/such/dir"}, "PUDEV_START_HOOKS_DIR='/no/such/dir' is not usable: expected an "
                                                "existing directory, such as /etc/pudev/start.d (or leave it unset)"),
    ({"PUDEV_START_HOOKS_DIR": "start.d"}, "PUDEV_START_HOOKS_DIR='start.d' is not usable: expected an absolute "
                                           "path, such as /etc/pudev/start.d (or leave it unset)"),
])
def test_the_entrypoint_checks_the_hook_variables_first(env: dict[str, str], expected: str) -> None:
    """Before anything changes or runs (PUDEV_USER=root: a user every passwd has)."""
    result = subprocess.run(["sh", str(BIN / "pudev-entrypoint"), "echo", "ran"], capture_output=True, text=True,
                            env={"PATH": os.environ["PATH"], "PUDEV_USER": "root", **env}, timeout=30, check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [f"pudev-entrypoint: {expected}"]


def test_the_helper_needs_to_know_which_set() -> None:
    result = subprocess.run(["sh", RUN_HOOKS, "echo", "ran"], capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"{PREFIX}pudev-run-hooks: expected system or user, then the command; got 'echo'\n"


def test_pudev_uid_0_is_warned_about_and_changes_no_user(tmp_path: Path) -> None:
    """-e PUDEV_UID="$(id -u)" from a host logged in as root: one line, and neither usermod, groupmod nor chown
    runs (stubs first on PATH say if they do); the start then goes on as whoever started it, as without the
    variables (here it stops at the image's home.sh, which this host lacks)."""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name in ("usermod", "groupmod", "chown", "setpriv"):
        _hook(stubs, name, f'#!/bin/sh\necho "STUB {name} $*" >&2\n', executable=True)
    result = subprocess.run(["sh", str(BIN / "pudev-entrypoint"), "echo", "ran"], capture_output=True, text=True,
                            env={"PATH": f"{stubs}:{os.environ['PATH']}", "PUDEV_USER": "root", "PUDEV_UID": "0",
                                 "PUDEV_GID": "0"}, timeout=30, check=False)
    lines = result.stderr.splitlines()
    assert lines[:1] == [f"{PREFIX}PUDEV_UID=0 is root: the command runs as root and root keeps its ids (for files "
                         "owned by your host user, start as that user, not root)"], lines
    assert not any("STUB" in line or "need the container to start as root" in line for line in lines), lines
