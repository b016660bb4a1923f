"""Login shells keep the image's environment, whatever the base's /etc/profile
does to PATH (Debian's resets it): bash -l, bash -lic, zsh -l and sh -l all find
python, pip, jupyter, nvcc and cuda-switch. tests/e2e runs this file as root too."""

from __future__ import annotations

import subprocess

import pytest

TOOLS = ("python", "pip", "jupyter", "nvcc", "cuda-switch")
SHELLS = {"bash -l": ["bash", "-l", "-c"], "bash -lic": ["bash", "-lic"], "zsh -l": ["zsh", "-l", "-c"],
          "sh -l": ["sh", "-l", "-c"]}


@pytest.mark.parametrize("shell", SHELLS)
def test_login_shell_finds_the_tools(shell: str) -> None:
    probe = "; ".join(f'echo "{tool}=$(command -v {tool})"' for tool in TOOLS)
    result = subprocess.run([*SHELLS[shell], probe], capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL, check=False)
    found = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    missing = [tool for tool in TOOLS if not found.get(tool)]
    assert not missing, f"{shell}: {missing} not on PATH ({result.stderr[-500:]})"


@pytest.mark.parametrize("shell", ["bash -l", "zsh -l"])
def test_cuda_switch_works_in_a_login_shell(shell: str) -> None:
    result = subprocess.run([*SHELLS[shell], "cuda-switch --list"], capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL, check=False)
    assert result.returncode == 0 and "active: CUDA" in result.stderr, result.stderr[-1000:]
