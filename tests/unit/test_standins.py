"""The OS stand-in's root filesystem: its root directory is 0755 in the tar `docker import` reads,
like `/` in a real image (rootless podman on vfs applies that mode; at 0700 only root can run)."""

from __future__ import annotations

import io
import stat
import subprocess
import tarfile
from pathlib import Path

from pudev.devtools import standins


def _root_entry(tar_bytes: bytes) -> tarfile.TarInfo:
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as archive:
        return next(entry for entry in archive if entry.name in (".", "./"))


def test_the_rootfs_tar_records_the_root_directory_as_0755(tmp_path: Path) -> None:
    with standins.root_directory(tmp_path) as rootfs:
        (rootfs / "bin").mkdir(mode=0o755)
        (rootfs / "bin/sh").write_text("#!/bin/true\n")
        stream = subprocess.run(standins.rootfs_tar(rootfs), capture_output=True, check=True).stdout
    root = _root_entry(stream)
    assert root.isdir()
    assert oct(stat.S_IMODE(root.mode)) == oct(0o755)
    assert not rootfs.exists(), "the root filesystem is temporary"


def test_each_step_that_shapes_the_os_image_is_part_of_its_recipe() -> None:
    """A changed root directory or tar step must rebuild the cached OS stand-in (and all built on it)."""
    assert {standins.root_directory, standins.rootfs_tar} <= set(standins._OS_STEPS)
