"""all_reduce, all_gather and broadcast, each checked element for element against what every rank can
compute on its own: integers well inside float32's exact range, so any difference is a real error."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

SIZES = (1, 4099, 1 << 18)  # one element, an odd count, 1 MiB of float32
DTYPES = (torch.float32, torch.int64)
_PRIME = 9973  # keeps every value, summed over thousands of ranks, below 2**24


def _contribution(rank: int, count: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    values = (torch.arange(count, dtype=torch.int64) * (rank + 1) + rank) % _PRIME
    return values.to(device=device, dtype=dtype)


def _mismatch(got: torch.Tensor, want: torch.Tensor) -> str:
    """"" when equal, else where and how they differ (the first wrong element)."""
    if torch.equal(got, want):
        return ""
    index = int((got != want).nonzero()[0].item())
    return f"element {index} of {want.numel()} is {got[index].item()}, expected {want[index].item()}"


def _all_reduce(rank: int, world: int, count: int, dtype: torch.dtype, device: torch.device) -> str:
    tensor = _contribution(rank, count, dtype, device)
    dist.all_reduce(tensor)
    want = sum(_contribution(peer, count, torch.int64, device) for peer in range(world))
    return _mismatch(tensor, torch.as_tensor(want).to(dtype))


def _all_gather(rank: int, world: int, count: int, dtype: torch.dtype, device: torch.device) -> str:
    parts = [torch.empty(count, dtype=dtype, device=device) for _ in range(world)]
    dist.all_gather(parts, _contribution(rank, count, dtype, device))
    for peer, part in enumerate(parts):
        if wrong := _mismatch(part, _contribution(peer, count, dtype, device)):
            return f"the part from rank {peer}: {wrong}"
    return ""


def _broadcast(rank: int, world: int, count: int, dtype: torch.dtype, device: torch.device) -> str:
    root = world - 1  # not rank 0: a root mix-up shows
    want = _contribution(root + 7, count, dtype, device)
    tensor = want.clone() if rank == root else torch.zeros_like(want)
    dist.broadcast(tensor, src=root)
    return _mismatch(tensor, want)


CHECKS = {"all_reduce": _all_reduce, "all_gather": _all_gather, "broadcast": _broadcast}


def run(rank: int, world: int, device: torch.device, progress: Any) -> dict[str, str]:
    """name -> "" when exact on this rank, else the first difference (with size and type)."""
    results: dict[str, str] = {}
    for name, check in CHECKS.items():
        progress.phase = name
        results[name] = ""
        for dtype in DTYPES:
            for count in SIZES:
                # Every rank issues every call even after a difference: skipping one would hang the others.
                wrong = check(rank, world, count, dtype, device)
                if wrong and not results[name]:
                    results[name] = f"{count} x {str(dtype).removeprefix('torch.')}: {wrong}"
    return results
