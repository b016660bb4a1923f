"""Every rank's report, on every rank: JSON bytes in uint8 tensors.

Not dist.all_gather_object: its tensors die with the call while gloo's worker thread may still hold
them, and destroy_process_group (holding the GIL) then waits for that thread, which waits for the GIL
to free them: a hang at exit (torch 2.4). Here the caller keeps the tensors until after the destroy. From torch
2.15 on a worker takes the GIL to drop even a kept tensor, so worker.teardown() also makes the destroy free the group
(its destructor joins the workers with the GIL released)."""

from __future__ import annotations

import json
from typing import Any

import torch
import torch.distributed as dist


def all_reports(report: dict[str, Any], group: Any, keep: list[torch.Tensor]) -> list[dict[str, Any]]:
    data = torch.tensor(list(json.dumps(report).encode()), dtype=torch.uint8)
    world = dist.get_world_size(group)
    size = torch.tensor([data.numel()], dtype=torch.int64)
    sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(sizes, size, group=group)
    longest = max(int(item.item()) for item in sizes)
    padded = torch.zeros(longest, dtype=torch.uint8)
    padded[: data.numel()] = data
    parts = [torch.zeros(longest, dtype=torch.uint8) for _ in range(world)]
    dist.all_gather(parts, padded, group=group)
    keep += [data, size, padded, *sizes, *parts]
    return [json.loads(bytes(part[: int(n.item())].tolist())) for part, n in zip(parts, sizes, strict=True)]
