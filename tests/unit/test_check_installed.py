"""docker/steps/check-installed.py, the package check after the last layer: uv's verdict stands, except
for the one upstream quirk it names (a wheel the base brought whose WHEEL file says manylinux2014_sbsa).
Run as the build runs it (the script with the lock parser mounted beside it, nothing of pudev on the path),
with a stand-in `uv` that prints what uv would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "docker/steps/check-installed.py"
LOCK_PARSER = REPO_ROOT / "scripts/pudev/common/lock_file.py"
QUIRK = "The package `nvidia-cusparselt-cu13` was built for a different platform"
CONFLICT = "The package `jupyterlab` requires `jinja2>=3.0.3`, but `3.0.0` is installed"


def _check(tmp_path: Path, output: str, code: int, shipped: str = "nvidia_cusparselt_cu13==0.8.1\ntorch==2.15.0\n"
           ) -> subprocess.CompletedProcess[str]:
    uv = tmp_path / "uv"
    uv.write_text(f"#!/bin/sh\ncat <<'OUT'\n{output}\nOUT\nexit {code}\n")
    uv.chmod(0o755)
    record = tmp_path / "base-packages.txt"
    record.write_text(shipped)
    steps = tmp_path / "steps"
    steps.mkdir()
    shutil.copy(SCRIPT, steps / SCRIPT.name)
    shutil.copy(LOCK_PARSER, steps / "lock_file.py")
    return subprocess.run([sys.executable, "-E", str(steps / SCRIPT.name), str(uv), str(record)], capture_output=True,
                          text=True, check=False)


@pytest.mark.parametrize(("output", "code", "shipped", "passes"), [
    ("Checked 137 packages in 29ms\nAll installed packages are compatible", 0, None, True),
    (f"Checked 137 packages\nFound 1 incompatibility\n{QUIRK}", 1, None, True),
    (f"Found 1 incompatibility\n{QUIRK}", 1, "torch==2.15.0\n", False),  # not the base's: ours must be right
    (f"Found 2 incompatibilities\n{QUIRK}\n{CONFLICT}", 1, None, False),
    (f"Found 1 incompatibility\n{CONFLICT}", 1, None, False),
    ("error: failed to read the environment", 2, None, False),  # uv failing outright is a failure too
])
def test_only_the_bases_platform_tag_quirk_passes(tmp_path: Path, output: str, code: int, shipped: str | None,
                                                  passes: bool) -> None:
    result = _check(tmp_path, output, code, *(() if shipped is None else (shipped,)))
    assert (result.returncode == 0) is passes, result.stdout + result.stderr
    assert output.splitlines()[-1] in result.stdout + result.stderr  # uv's own words are always shown
