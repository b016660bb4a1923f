"""Small public helpers for faster training; each `pudev bench` rung is built from them.

    from pudev.image.train import fast_loader, optimize_model, MixedPrecision, to_device

    loader = fast_loader(dataset, batch_size=128)              # workers, pinned memory, prefetch
    model = optimize_model(model, compile=True, channels_last=True)
    amp = MixedPrecision("cuda")                               # bf16 where supported, else fp16 + GradScaler
    for images, labels in loader:
        images, labels = to_device((images, labels), "cuda", channels_last=True)
        with amp.autocast():
            loss = loss_fn(model(images), labels)
        amp.backward_and_step(loss, optimizer)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint_sequential
from torch.utils.data import DataLoader, Dataset


def available_cpus() -> int:
    """CPUs this container may use (its cgroup/affinity), not the host's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def loader_workers(cap: int = 16) -> int:
    return max(1, min(cap, available_cpus() - 1))


def fast_loader(dataset: Dataset[Any], batch_size: int, *, shuffle: bool = True, workers: int | None = None,
                generator: torch.Generator | None = None, collate_fn: Callable[..., Any] | None = None,
                drop_last: bool = True, timeout: float = 0) -> DataLoader[Any]:
    """A DataLoader tuned for GPU training: workers sized from the CPUs the container
    may use, pinned memory, persistent workers and deeper prefetching. `timeout` (seconds, 0 for
    none) bounds the wait for one batch from the workers; without workers there is nothing to wait for."""
    workers = loader_workers() if workers is None else workers
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, num_workers=workers,
                      pin_memory=torch.cuda.is_available(), persistent_workers=workers > 0,
                      prefetch_factor=4 if workers > 0 else None, generator=generator, collate_fn=collate_fn,
                      drop_last=drop_last, timeout=timeout if workers > 0 else 0)


def to_device(batch: tuple[torch.Tensor, ...], device: str | torch.device, *, channels_last: bool = False,
              non_blocking: bool = True) -> tuple[torch.Tensor, ...]:
    """Copy a batch; non-blocking copies overlap with compute when memory is pinned."""
    moved = []
    for tensor in batch:
        copied = tensor.to(device, non_blocking=non_blocking)
        if channels_last and copied.dim() == 4:
            copied = copied.contiguous(memory_format=torch.channels_last)
        moved.append(copied)
    return tuple(moved)


class CheckpointedSequential(nn.Module):
    """Recompute a Sequential's activations in the backward pass instead of storing them."""

    def __init__(self, inner: nn.Sequential) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if not self.training or not torch.is_grad_enabled():
            return self.inner(inputs)
        result: torch.Tensor = checkpoint_sequential(self.inner, len(self.inner), inputs, use_reentrant=False)
        return result


def enable_checkpointing(model: nn.Module) -> nn.Module:
    """Checkpoint the big repeated blocks: ResNet stages, ViT encoder layers, or a `features` Sequential."""
    wrapped = 0
    for name in ("layer1", "layer2", "layer3", "layer4", "features"):
        block = getattr(model, name, None)
        if isinstance(block, nn.Sequential):
            setattr(model, name, CheckpointedSequential(block))
            wrapped += 1
    encoder = getattr(model, "encoder", None)
    if encoder is not None and isinstance(getattr(encoder, "layers", None), nn.Sequential):
        encoder.layers = CheckpointedSequential(encoder.layers)
        wrapped += 1
    if not wrapped:
        raise ValueError(f"no block to checkpoint in {type(model).__name__}")
    return model


def optimize_model(model: nn.Module, *, compile: bool = False, compile_mode: str = "default",
                   channels_last: bool = False, checkpoint: bool = False) -> nn.Module:
    """The model-side rungs in one call: channels_last, activation checkpointing, torch.compile."""
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    if checkpoint:
        model = enable_checkpointing(model)
    if compile:
        model = torch.compile(model, mode=compile_mode)
    return model


class MixedPrecision:
    """bf16 autocast where the device supports it, else fp16 with a GradScaler."""

    def __init__(self, device: str, *, enabled: bool = True) -> None:
        self.device = device
        self.enabled = enabled
        cuda = device.startswith("cuda")
        self.dtype = torch.bfloat16 if (not cuda or torch.cuda.is_bf16_supported()) else torch.float16
        self.scaler = torch.amp.GradScaler("cuda", enabled=enabled and cuda and self.dtype == torch.float16)

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if not self.enabled:
            return contextlib.nullcontext()
        context: contextlib.AbstractContextManager[Any] = torch.autocast(
            device_type="cuda" if self.device.startswith("cuda") else "cpu", dtype=self.dtype)
        return context

    def backward_and_step(self, loss: torch.Tensor, optimizer: torch.optim.Optimizer) -> None:
        self.scaler.scale(loss).backward()
        self.scaler.step(optimizer)
        self.scaler.update()
        optimizer.zero_grad(set_to_none=True)


def batches(loader: DataLoader[Any]) -> Iterator[Any]:
    """Endless batches: a new epoch starts when one runs out."""
    while True:
        yield from loader
