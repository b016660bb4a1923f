"""What `pudev verify` reports about cluster networking: the user-space verbs library and
its hardware providers (NCCL loads libibverbs to use InfiniBand or RoCE), the RDMA devices
the host has and the ones this container can open, and the ssh client MPI-style
launchers use. Read from the filesystem only, under `root` so tests can fake one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

# Debian/Ubuntu multiarch folders first, then other layouts.
LIBRARY_GLOBS = ("usr/lib/*-linux-gnu/libibverbs.so.1", "usr/lib64/libibverbs.so.1", "usr/lib/libibverbs.so.1")
_PROVIDER = re.compile(r"^lib(?P<name>.+)-rdmav\d+\.so$")


@dataclass
class NetworkFacts:
    verbs_library: str = ""  # libibverbs.so.1's real file name ('' when missing): libibverbs.so.1.14.44.0
    verbs_providers: list[str] = field(default_factory=list)  # mlx5, efa, ... ('' when none)
    rdma_devices: list[str] = field(default_factory=list)  # the host's, from /sys/class/infiniband
    uverbs_devices: list[str] = field(default_factory=list)  # /dev/infiniband/uverbsN this container can open
    ssh_client: str = ""  # `ssh -V`: OpenSSH_9.2p1 ('' when missing)


def verbs_library(root: Path) -> Path | None:
    for pattern in LIBRARY_GLOBS:
        for path in sorted(root.glob(pattern)):
            return path
    return None


def verbs_providers(library: Path) -> list[str]:
    """The providers rdma-core installs beside the library: libibverbs/libmlx5-rdmav34.so -> mlx5."""
    folder = library.parent / "libibverbs"
    names = (_PROVIDER.match(path.name) for path in folder.glob("lib*-rdmav*.so")) if folder.is_dir() else ()
    return sorted(match.group("name") for match in names if match)


def rdma_version(library_name: str) -> str:
    """rdma-core's release from the library's file name: libibverbs.so.1.14.44.0 -> 44.0."""
    parts = library_name.split(".so.1.", 1)[-1].split(".") if ".so.1." in library_name else []
    return ".".join(parts[-2:]) if len(parts) >= 3 else ""


def ssh_version() -> str:
    ssh = shutil.which("ssh")
    if ssh is None:
        return ""
    try:
        result = subprocess.run([ssh, "-V"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (result.stderr or result.stdout).strip().split(",")[0].split()[0] if result.returncode == 0 else ""


def collect(root: Path = Path("/")) -> NetworkFacts:
    facts = NetworkFacts(ssh_client=ssh_version() if root == Path("/") else "")
    library = verbs_library(root)
    if library is not None:
        facts.verbs_library = library.resolve().name
        facts.verbs_providers = verbs_providers(library)
    sysfs = root / "sys/class/infiniband"
    facts.rdma_devices = sorted(path.name for path in sysfs.iterdir()) if sysfs.is_dir() else []
    facts.uverbs_devices = sorted(str(path) for path in (root / "dev/infiniband").glob("uverbs*")
                                  if os.access(path, os.R_OK | os.W_OK))
    return facts
