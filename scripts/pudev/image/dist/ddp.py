"""A short seeded DDP run: each rank starts from different weights and sees different data, so identical
final weights prove DDP's initial broadcast and its gradient averaging, and a falling loss proves learning."""

from __future__ import annotations

import hashlib
import struct
import time
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

FEATURES, BATCH, LEARNING_RATE = 16, 64, 0.1


def _model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.Tanh(), nn.Linear(32, 1))


def _batches(seed: int, rank: int, steps: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    teacher = torch.Generator().manual_seed(seed)
    weights = torch.randn(FEATURES, 1, generator=teacher)  # the same target function on every rank
    own = torch.Generator().manual_seed(seed * 1000 + rank)  # this rank's own samples
    inputs = [torch.randn(BATCH, FEATURES, generator=own) for _ in range(steps)]
    return [(x, torch.tanh(x @ weights / FEATURES**0.5)) for x in inputs]


def _mean_over_ranks(value: float, device: torch.device) -> float:
    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(tensor)
    return float(tensor.item() / dist.get_world_size())


def weights_digest(model: nn.Module) -> str:
    flat = torch.cat([p.detach().reshape(-1).float().cpu() for p in model.parameters()])
    return hashlib.sha256(struct.pack(f"{flat.numel()}f", *flat.tolist())).hexdigest()


def train(seed: int, steps: int, device: torch.device, progress: Any, step_delay: float = 0.0) -> dict[str, Any]:
    rank = dist.get_rank()
    model = _model(seed + rank).to(device)  # different on purpose: DDP must broadcast rank 0's
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=LEARNING_RATE)
    losses: list[float] = []
    for step, (inputs, targets) in enumerate(_batches(seed, rank, steps)):
        progress.phase = f"DDP step {step + 1}/{steps}"
        loss = nn.functional.mse_loss(ddp(inputs.to(device)), targets.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # gradients are averaged across ranks here
        optimizer.step()
        if step in (0, steps - 1):
            losses.append(_mean_over_ranks(float(loss.item()), device))
        if step_delay:
            time.sleep(step_delay)  # --step-delay: a longer run to watch, or to stop a rank in
    return {"steps": steps, "first_loss": losses[0], "last_loss": losses[-1], "digest": weights_digest(model)}
