"""The default user and the process model."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from emulation import emulator, pid1_command

from pudev.image.record import ImageRecord


@pytest.mark.platform
def test_runs_as_uid_1000_by_default(record: ImageRecord) -> None:
    assert os.getuid() == 1000
    assert pwd.getpwuid(os.getuid()).pw_name == record.user


def test_home_and_workspace(record: ImageRecord) -> None:
    """Both belong to the user and, for OpenShift's random uid with gid 0, to group 0 (setgid)."""
    home = Path(pwd.getpwnam(record.user).pw_dir)
    for folder in (home, Path("/workspace")):
        info = folder.stat()
        assert (info.st_uid, info.st_gid, oct(info.st_mode & 0o7777)) == (1000, 0, "0o2775"), folder
    assert os.access(home, os.W_OK)
    probe = Path("/workspace/.pudev-write-probe")
    probe.write_text("ok")
    probe.unlink()
    assert Path.cwd() == Path("/workspace")


@pytest.mark.platform
def test_tini_is_pid_1() -> None:
    command = pid1_command()
    program = command[1] if emulator() else command[0]  # under emulation the emulator runs tini
    assert Path(program).name == "tini", command


def test_default_user_cannot_write_outside_home_workspace_and_tmp(record: ImageRecord) -> None:
    """Everything this user can write, on the image's own filesystem, is under its home,
    /workspace, a sticky world-writable temporary folder, or the compiler cache and the
    wheelhouse (volume mount points any uid must write; docs/using/extensions.md)."""
    import os
    import subprocess

    home = pwd.getpwnam(record.user).pw_dir
    volumes = (os.environ["CCACHE_DIR"], os.environ["PUDEV_WHEELHOUSE"])
    allowed = (home, "/workspace", "/tmp", "/var/tmp", "/run/lock", "/var/lock", "/dev/shm", *volumes)
    # Bind mounts and volumes the container was started with are not the image's filesystem.
    mounts = {line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()} - {"/"}
    prune: list[str] = []
    for mount in sorted(mounts):
        prune += ["-path", mount, "-prune", "-o"]
    found = subprocess.run(["find", "/", "-xdev", *prune, "-writable", "-print"], capture_output=True,
                           text=True, check=False, timeout=600).stdout.splitlines()
    outside = [path for path in found
               if not any(path == root or path.startswith(root + "/") for root in allowed)]
    assert not outside, outside[:20]
    for sticky in ("/tmp", "/var/tmp"):
        assert Path(sticky).stat().st_mode & 0o1000, f"{sticky} must be sticky"
    assert len(found) > 3  # the search itself worked: the home and /workspace are writable
