"""zsh is the login shell, starts fast, loads its plugins and shows the toolkit;
bash keeps working with the same environment."""

from __future__ import annotations

import os
import pwd
import subprocess
import time

from pudev.image.record import ImageRecord


def _shell(shell: str, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shell, "-i", "-c", command], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)


def test_zsh_is_the_default_users_login_shell(record: ImageRecord) -> None:
    assert pwd.getpwnam(record.user).pw_shell == "/usr/bin/zsh"
    assert os.environ["SHELL"] == "/usr/bin/zsh"


def test_interactive_zsh_starts_well_under_a_second() -> None:
    _shell("zsh", "true")  # warm the completion dump and the page cache
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        assert _shell("zsh", "true").returncode == 0
        timings.append(time.perf_counter() - started)
    assert min(timings) < 0.5, timings


def test_zsh_loads_highlighting_and_autosuggestions() -> None:
    result = _shell("zsh", "print -r -- ${+functions[_zsh_highlight]} ${+functions[_zsh_autosuggest_start]}")
    assert result.stdout.split() == ["1", "1"], result.stderr


def test_zsh_prompt_shows_the_active_toolkit(record: ImageRecord) -> None:
    result = _shell("zsh", 'print -rP -- "$PROMPT"')
    assert f"cuda {record.default_toolkit}" in result.stdout


def test_zsh_prompt_shows_a_virtualenv(tmp_path: object) -> None:
    result = _shell("zsh", 'VIRTUAL_ENV=/tmp/venvs/myproj; print -rP -- "$PROMPT"')
    assert "(myproj)" in result.stdout


def test_bash_gets_cuda_switch_and_the_prompt(record: ImageRecord) -> None:
    result = _shell("bash", 'type cuda-switch >/dev/null && echo "${PS1@P}"')
    assert result.returncode == 0, result.stderr
    assert f"cuda {record.default_toolkit}" in result.stdout
