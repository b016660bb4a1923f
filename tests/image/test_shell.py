"""zsh is the login shell, starts fast, loads its plugins and shows the toolkit;
bash keeps working with the same environment."""

from __future__ import annotations

import os
import pwd
import subprocess
import time
from pathlib import Path

import pytest
from emulation import emulator

from pudev.image.record import ImageRecord

IMAGE_DUMP = "/var/cache/pudev/zsh/zcompdump"


def _shell(shell: str, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shell, "-i", "-c", command], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)


@pytest.mark.platform
def test_zsh_is_the_default_users_login_shell(record: ImageRecord) -> None:
    assert pwd.getpwnam(record.user).pw_shell == "/usr/bin/zsh"
    assert os.environ["SHELL"] == "/usr/bin/zsh"


def test_the_first_zsh_in_a_fresh_home_is_fast(tmp_path: Path) -> None:
    """A new container, or a home / ~/.cache on a fresh volume or tmpfs, has no completion dump of
    its own: zsh must start from the image's compiled one instead of building one (which took 340-530 ms)."""
    assert Path(IMAGE_DUMP + ".zwc").is_file()
    home = tmp_path / "fresh-home"  # empty: no .zshrc, no .cache
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    env.pop("XDG_CACHE_HOME", None)
    started = time.perf_counter()
    first = subprocess.run(["zsh", "-i", "-c", "print -r -- $_comp_dumpfile ${+functions[cuda-switch]}"],
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env, check=False)
    elapsed = time.perf_counter() - started
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == [IMAGE_DUMP, "1"]  # the image's shell, from its own dump
    assert not list(home.rglob("*zcompdump*")), "zsh wrote a dump of its own into the fresh home"
    if not emulator():  # an emulated CPU is several times slower: the bound holds on real hardware only
        assert elapsed < 0.3, f"first zsh start took {elapsed * 1000:.0f} ms"


@pytest.mark.platform
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
