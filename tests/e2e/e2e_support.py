"""Helpers shared by the end-to-end tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pudev.paths import REPO_ROOT

PUDEV = [sys.executable, "-m", "pudev.cli"]


@dataclass(frozen=True)
class LocalImage:
    tag: str
    image_id: str


@dataclass(frozen=True)
class SuiteRun:
    returncode: int
    junit: Path
    output: str


def run_pudev(*args: str, timeout: float = 3600, env: dict[str, str] | None = None,
              check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real CLI as a user would, capturing its output."""
    result = subprocess.run([*PUDEV, *args], check=False, capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, **(env or {})}, cwd=REPO_ROOT)
    if check and result.returncode != 0:
        raise AssertionError(f"pudev {' '.join(args)} exited {result.returncode}:\n{result.stdout[-4000:]}\n"
                             f"{result.stderr[-4000:]}")
    return result


def build_context_copy(tmp_path: Path) -> Path:
    """What the build context holds, so a test can change its own copy (PUDEV_ROOT=copy)."""
    root = tmp_path / "repo"
    for relative in ("docker", "requirements", "scripts/pudev", "tests/image"):
        shutil.copytree(REPO_ROOT / relative, root / relative, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / ".dockerignore", root / ".dockerignore")
    return root
