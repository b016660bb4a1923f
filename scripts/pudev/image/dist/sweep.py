"""The all_reduce message-size sweep: in place, float32, the slowest rank's time per call (as a job waits
for its slowest rank), turned into algbw and busbw the way nccl-tests does."""

from __future__ import annotations

import time
from typing import Any

import torch
import torch.distributed as dist

from pudev.image.dist.busbw import algbw, busbw


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _slowest(seconds: float, device: torch.device) -> float:
    tensor = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return float(tensor.item())


def run(sizes: list[int], *, warmup: int, iters: int, device: torch.device, progress: Any) -> list[dict[str, Any]]:
    ranks = dist.get_world_size()
    rows = []
    for size in sizes:
        progress.phase = f"all_reduce sweep at {size} bytes"
        buffer = torch.zeros(size // 4, dtype=torch.float32, device=device)  # zeros stay zeros: checked below
        for _ in range(warmup):
            dist.all_reduce(buffer)
        _sync(device)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buffer)
        _sync(device)
        seconds = _slowest((time.perf_counter() - start) / iters, device)
        rows.append({"bytes": size, "seconds": seconds, "algbw_gbps": algbw(size, seconds),
                     "busbw_gbps": busbw(size, seconds, ranks), "wrong": int(torch.count_nonzero(buffer).item())})
        del buffer
    return rows
