"""What each node brings to the run: shared memory, its name, InfiniBand devices and libraries, and the
settings that steer NCCL and gloo. Gathered by every rank (standard library only), judged in judge.py."""

from __future__ import annotations

import ctypes.util
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from pudev.image.verify_evidence import shm_size

# Settings that change which transport NCCL or gloo picks; the table shows any that are set.
TRANSPORT_ENV = ("NCCL_IB_DISABLE", "NCCL_NET", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_P2P_DISABLE",
                 "NCCL_SHM_DISABLE", "NCCL_NVLS_ENABLE", "GLOO_SOCKET_IFNAME")


@dataclass(frozen=True)
class NodeFacts:
    host: str
    fqdn: str
    resolves_to: list[str]  # what the fqdn resolves to; [] when it does not
    shm_bytes: int
    ib_devices: list[str]  # /dev/infiniband/uverbs*: what NCCL's IB transport opens
    verbs_library: str  # libibverbs as the loader finds it; "" when missing
    env: dict[str, str] = field(default_factory=dict)


def _addresses(name: str) -> list[str]:
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)})
    except (OSError, UnicodeError):
        return []


def collect() -> NodeFacts:
    fqdn = socket.getfqdn()
    ib = Path("/dev/infiniband")
    devices = sorted(path.name for path in ib.glob("uverbs*")) if ib.is_dir() else []
    return NodeFacts(host=socket.gethostname(), fqdn=fqdn, resolves_to=_addresses(fqdn), shm_bytes=shm_size(),
                     ib_devices=devices, verbs_library=ctypes.util.find_library("ibverbs") or "",
                     env={key: os.environ[key] for key in TRANSPORT_ENV if key in os.environ})
