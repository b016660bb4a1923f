"""Bus bandwidth as nccl-tests defines it, message sizes, and the published figures to compare with."""

from __future__ import annotations

import re
from dataclasses import dataclass

GB = 1e9  # nccl-tests reports GB/s in powers of ten
FORMULA = "busbw = algbw * 2(n-1)/n"
FORMULA_SOURCE = "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_SIZE = re.compile(r"^(\d+)\s*([KMG]?)(I?B)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Reference:
    system: str
    busbw_gbps: float
    source: str
    note: str


# all_reduce_perf peaks on one node of 8 GPUs (NVLink 4 with NVLink SHARP); both reached at 1-8 GiB messages.
REFERENCES = (
    Reference("8x H100 SXM", 480.0, "https://github.com/NVIDIA/nccl-tests/issues/212",
              "NCCL's maintainer: on 8 GPUs expect a peak busBw of ~480 GB/s (algbw ~275 GB/s) at large sizes"),
    Reference("8x H200", 475.0, "https://github.com/NVIDIA/nccl-tests/issues/272",
              "all_reduce_perf -b 64k -e 4G on 8x H200, NCCL 2.20.3: peak busbw 475 GB/s"),
)


def allreduce_factor(ranks: int) -> float:
    """2(n-1)/n: each rank sends and receives that share of the data, whatever the algorithm (ring, tree)."""
    return 2 * (ranks - 1) / ranks


def algbw(size: int, seconds: float) -> float:
    return size / seconds / GB


def busbw(size: int, seconds: float, ranks: int) -> float:
    return algbw(size, seconds) * allreduce_factor(ranks)


def parse_size(text: str) -> int:
    """"4M", "1GiB", "65536" -> bytes."""
    match = _SIZE.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a size such as 4M, 1G or 65536")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def human_size(size: int) -> str:
    for unit in ("G", "M", "K"):
        if size >= _UNITS[unit] and size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]} {unit}iB"
    return f"{size} B"


def sweep_sizes(smallest: int, largest: int, factor: int = 4) -> list[int]:
    """smallest, smallest*factor, ... and always `largest` itself (the size users asked for)."""
    sizes, size = [], smallest
    while size < largest:
        sizes.append(size)
        size *= factor
    return [*sizes, largest]
