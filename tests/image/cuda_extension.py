"""Build the tiny CUDA test extension with setup.py, as a user would."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

SOURCES = Path(__file__).parent / "extension"


def setup_py_build(workdir: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Copy the sources into `workdir` and run `setup.py build_ext --inplace` there."""
    for source in SOURCES.iterdir():
        if source.is_file():
            shutil.copy(source, workdir / source.name)
    environment = {**os.environ, "MAX_JOBS": str(os.cpu_count() or 2), **(env or {})}
    return subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        check=False, cwd=workdir, env=environment, capture_output=True, text=True, timeout=1800,
    )


def import_extension(built: Path) -> Any:
    """Import the module that build_extension() left in `built`."""
    sys.path.insert(0, str(built))
    try:
        return importlib.import_module("pudev_test_extension")
    finally:
        sys.path.remove(str(built))


# One architecture keeps the build short on small CI machines (the image's default list is the
# toolkit's whole supported range, several minutes per kernel on 2 cores); every toolkit compiles it.
TEST_ARCH = "8.0"


def extension_arch() -> str:
    """TEST_ARCH, or with a GPU attached, that GPU's own: machine code for 8.0 runs only on 8.x GPUs
    (an H200, 9.0, got its input back unchanged from a kernel that never started)."""
    import torch

    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return f"{major}.{minor}"
    return TEST_ARCH


def build_extension(workdir: Path, env: dict[str, str] | None = None) -> Path:
    """Build against the default toolkit; its output stays in workdir/build.log."""
    result = setup_py_build(workdir, {"TORCH_CUDA_ARCH_LIST": TEST_ARCH, **(env or {})})
    (workdir / "build.log").write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        raise AssertionError(f"extension build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return workdir
