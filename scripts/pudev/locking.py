"""`pudev lock`: hashed requirement locks per variant, resolved by uv for the
variant's Python and platform (not the host's)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.matrix import Variant
from pudev.paths import REPO_ROOT, REQUIREMENTS_DIR

# manylinux_2_28 wheels run on every base here (Ubuntu 22.04: glibc 2.35; Debian 12: 2.36).
PLATFORM_TAGS = {"linux/amd64": "x86_64-manylinux_2_28", "linux/arm64": "aarch64-manylinux_2_28"}


def uv_command() -> str:
    beside_python = Path(sys.executable).with_name("uv")
    found = str(beside_python) if beside_python.exists() else shutil.which("uv")
    if not found:
        raise PudevError("uv is not installed: run `make venv` (it installs requirements/dev.txt)")
    return found


def lock_path(variant: Variant) -> Path:
    return REQUIREMENTS_DIR / "lock" / f"{variant.name}.txt"


def compile_lock(source: Path, target: Path, *, python: str, platform: str, constraint: Path | None = None) -> None:
    """uv pip compile with hashes for the given Python and platform (not the host's)."""
    command = [
        uv_command(), "pip", "compile", str(source),
        "--generate-hashes", "--quiet", "--python-version", python,
        "--python-platform", PLATFORM_TAGS[platform],
        "--custom-compile-command", "make lock",
        "--output-file", str(target),
    ]
    if constraint is not None:
        command += ["--constraint", str(constraint)]
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise PudevError(f"locking {target.name} failed: {last}")


def write_locks(variants: list[Variant]) -> list[Path]:
    """One lock per variant, plus the build-only tools (for the first variant's Python and platform)."""
    written = []
    for variant in variants:
        compile_lock(REQUIREMENTS_DIR / "image.in", lock_path(variant), python=variant.python,
                     platform=variant.platform)
        written.append(lock_path(variant))
    tools = REQUIREMENTS_DIR / "lock" / "build-tools.txt"
    compile_lock(REQUIREMENTS_DIR / "build-tools.in", tools, python=variants[0].python,
                 platform=variants[0].platform)
    return [*written, tools]
