"""The constraints keep every pip install from replacing the CUDA build of torch."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest


def _pip(*args: str, cwd: Path, constraints: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if constraints or k != "PIP_CONSTRAINT"}
    return subprocess.run([sys.executable, "-m", "pip", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)


def _wheel(directory: Path, name: str, version: str, requires: list[str]) -> None:
    """A minimal pure-Python wheel, written directly (no build backend needed)."""
    dist_info = f"{name.replace('-', '_')}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
    files = {
        f"{dist_info}/METADATA": metadata,
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: pudev-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{dist_info}/RECORD,,\n"
    files[f"{dist_info}/RECORD"] = record
    with zipfile.ZipFile(directory / f"{name.replace('-', '_')}-{version}-py3-none-any.whl", "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local index offering another torch, plus a package that asks for it."""
    wheels = tmp_path_factory.mktemp("wheelhouse")
    _wheel(wheels, "torch", "2.0.0", [])
    _wheel(wheels, "wants-old-torch", "0.1", ["torch==2.0.0"])
    return wheels


def test_without_the_constraint_pip_would_swap_torch(wheelhouse: Path, tmp_path: Path) -> None:
    """What the wheelhouse resolves to without the constraint: another torch. Into a folder of its own, which
    leaves the installed torch out of pip's resolution: into the user site over a venv's torch (the 2024
    line's stand-in base) pip refuses for another reason (that site would lack precedence)."""
    result = _pip("install", "--dry-run", "--no-index", "--find-links", str(wheelhouse), "--target", str(tmp_path),
                  "wants-old-torch", cwd=wheelhouse, constraints=False)
    assert result.returncode == 0, result.stderr
    assert "torch-2.0.0" in result.stdout  # the negative control: this is what the constraint prevents


def test_conflicting_package_fails_in_one_line_naming_the_torch_lock(wheelhouse: Path) -> None:
    """pip refuses, and instead of its dozen-line report (whose "loosen the range" is wrong advice here) one
    line names what wanted which torch, the image's lock and what to do."""
    installed = importlib.metadata.version("torch")
    result = _pip("install", "--no-index", "--find-links", str(wheelhouse), "wants-old-torch", cwd=wheelhouse)
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "Cannot install wants-old-torch" in message  # pip's own first line
    ours = [line for line in message.splitlines() if line.startswith("pudev: ")]
    assert len(ours) == 1, message
    assert "wants-old-torch 0.1 wants torch==2.0.0" in ours[0] and f"keeps torch=={installed}" in ours[0]
    assert os.environ["PIP_CONSTRAINT"] in ours[0] and "install a release of wants-old-torch" in ours[0]
    assert "loosen the range" not in message and "The conflict is caused by" not in message, message
    assert importlib.metadata.version("torch") == installed
