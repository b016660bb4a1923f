"""What NCCL chose, read from its own INFO lines (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET).

    NCCL version 2.20.5+cuda12.4
    ... NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>
    ... NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
    ... NCCL INFO Using network IB
    ... NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
    ... NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/IB/0/GDRDMA
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+\S*)")
_NETWORK = re.compile(r"NCCL INFO Using network (.+?)\s*$")
_DEVICES = re.compile(r"NCCL INFO NET/(\w+) ?: Using (.+?)\s*$")
_VIA = re.compile(r"NCCL INFO Channel .* via (\S+)")


@dataclass(frozen=True)
class NcclChoice:
    version: str  # the library really loaded, e.g. "2.20.5+cuda12.4"; "" when the log said nothing
    network: str  # "IB", "Socket" or a plugin's name; "" when unknown
    devices: str  # what that network uses, e.g. "[0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>"
    paths: tuple[str, ...]  # how the channels connect: "P2P/CUMEM", "SHM/direct", "NET/IB", "NET/Socket"
    gdrdma: bool  # GPUDirect RDMA on a network path


def _path(via: str) -> str:
    return "/".join(via.split("/")[:2])


def parse(text: str) -> NcclChoice:
    version = network = ""
    devices: dict[str, str] = {}  # per network kind, as each NET/<kind> line names them
    paths: list[str] = []
    gdrdma = False
    for line in text.splitlines():
        if not version and (match := _VERSION.search(line)):
            version = match.group(1)
        if match := _NETWORK.search(line):
            network = match.group(1)
        elif match := _DEVICES.search(line):
            devices[match.group(1)] = match.group(2)
        elif match := _VIA.search(line):
            paths.append(_path(match.group(1)))
            gdrdma = gdrdma or "GDRDMA" in match.group(1)
    return NcclChoice(version=version, network=network, devices=devices.get(network, ""),
                      paths=tuple(dict.fromkeys(paths)), gdrdma=gdrdma)
