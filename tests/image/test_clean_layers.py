"""No caches or build leftovers in the image (.pyc files stay: they speed imports).

Run as the default user it checks every place that user can read; tests/e2e
runs it again as root for /root."""

from __future__ import annotations

import glob
import os
from pathlib import Path

CACHE_GLOBS = [
    "/root/.cache/pip/**", "/home/*/.cache/pip/**", "/root/.cache/uv/**", "/home/*/.cache/uv/**",
    "/var/lib/apt/lists/*", "/var/cache/apt/archives/*.deb", "/var/cache/apt/*.bin",
    "/opt/conda/pkgs/*/**", "/home/*/.cache/yarn/**", "/usr/local/share/.cache/**",
    "/opt/conda/share/jupyter/lab/staging/**", "/usr/local/share/jupyter/lab/staging/**",
    "/tmp/*", "/var/tmp/*", "/var/log/apt/*", "/var/log/dpkg.log",
]
# Empty placeholders apt itself keeps.
ALLOWED = {"/var/lib/apt/lists/lock", "/var/lib/apt/lists/partial", "/var/cache/apt/archives/lock",
           "/var/cache/apt/archives/partial"}


def _leftovers(started: float) -> list[str]:
    found = []
    for pattern in CACHE_GLOBS:
        for path in glob.glob(pattern, recursive=True):
            if path in ALLOWED or not os.path.isfile(path) or os.path.getsize(path) == 0:
                continue
            if pattern.startswith(("/tmp", "/var/tmp")) and os.path.getmtime(path) >= started:
                continue  # written by this test run, not by the build
            found.append(path)
    return found


def test_no_cache_files_in_the_image() -> None:
    started = Path("/proc/1").stat().st_mtime  # the container's start: older files came from the image
    leftovers = _leftovers(started)
    assert not leftovers, f"{len(leftovers)} cache files, e.g. {leftovers[:10]}"


def test_bytecode_is_kept_for_fast_imports() -> None:
    import json

    cached = Path(json.__file__).parent / "__pycache__"
    assert any(cached.glob("*.pyc"))
    assert any(Path("/opt/pudev/lib/pudev/image/__pycache__").glob("*.pyc"))
