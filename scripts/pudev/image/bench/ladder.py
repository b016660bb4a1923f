"""The ladder: the same seeded training job, each rung adding one optimisation
on top of the previous ones, measured the same way."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pudev.image.bench.data import JpegFolder, collate_bytes, decode_batch
from pudev.image.bench.models import CONV_NETS, build_model
from pudev.image.train import MixedPrecision, batches, fast_loader, loader_workers, optimize_model, to_device

# How long a rung waits for one batch. A worker whose batch cannot be sent (an error in its sending thread)
# drops it, and the loader would wait forever; a batch takes seconds even on the smoke run's CPU.
LOADER_TIMEOUT_S = 300.0


class LoaderStalledError(RuntimeError):
    """A rung's data loader delivered no batch within LOADER_TIMEOUT_S."""


@dataclass(frozen=True)
class Rung:
    index: int
    name: str
    tuned_loader: bool = False
    gpu_decode: bool = False
    compile: bool = False
    amp: bool = False
    channels_last: bool = False
    checkpoint: bool = False


def ladder(*, gpu_decode: bool, conv_net: bool) -> list[Rung]:
    """Rungs 0..5, cumulative. channels_last is a no-op rung for a ViT (reported as such)."""
    base = Rung(0, "baseline")
    loader = replace(base, index=1, name="loader", tuned_loader=True, gpu_decode=gpu_decode)
    compiled = replace(loader, index=2, name="compile", compile=True)
    amp = replace(compiled, index=3, name="amp", amp=True)
    channels_last = replace(amp, index=4, name="channels_last", channels_last=conv_net)
    checkpoint = replace(channels_last, index=5, name="checkpoint", checkpoint=True)
    return [base, loader, compiled, amp, channels_last, checkpoint]


@dataclass(frozen=True)
class BenchConfig:
    model: str
    device: str
    data: Path
    classes: int
    batch_size: int
    warmup: int
    steps: int
    baseline_workers: int = 2
    compile_mode: str = "default"
    lr: float = 0.05
    seed: int = 0


@dataclass
class RungResult:
    rung: Rung
    step_times: list[float] = field(default_factory=list)  # measured steps only (warm-up excluded)
    data_times: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)  # every step, warm-up included
    peak_memory: int = 0
    gpu_utilization: float | None = None
    workers: int = 0

    def summary(self, batch_size: int) -> dict[str, Any]:
        median = statistics.median(self.step_times)
        return {
            "rung": self.rung.index, "name": self.rung.name, "median_step_s": median,
            "images_per_s": batch_size / median, "peak_memory_bytes": self.peak_memory,
            "gpu_utilization": self.gpu_utilization, "data_wait_fraction": sum(self.data_times) / sum(self.step_times),
            "losses": self.losses, "workers": self.workers, "settings": self.rung.__dict__,
        }


class UtilizationSampler:
    """Average GPU utilisation through NVML, sampled in the background at 10 Hz."""

    def __init__(self, device: str) -> None:
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._source: Any = None
        if device.startswith("cuda"):
            from pudev.image.nvml import NvmlUnavailableError, PynvmlSource

            try:
                self._source = PynvmlSource()
            except NvmlUnavailableError:
                self._source = None
        self._index = torch.cuda.current_device() if self._source else 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.samples.append(self._source.utilization(self._index))

    def __enter__(self) -> UtilizationSampler:
        if self._source:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._source:
            self._thread.join()
            if not self.samples:  # a rung shorter than one period: NVML's figure covers the last one
                self.samples.append(self._source.utilization(self._index))
            self._source.close()

    @property
    def average(self) -> float | None:
        return statistics.fmean(self.samples) if self.samples else None


def _loader(config: BenchConfig, rung: Rung) -> tuple[Any, int]:
    generator = torch.Generator().manual_seed(config.seed)
    dataset = JpegFolder(config.data, decode="gpu" if rung.gpu_decode else "cpu")
    collate = collate_bytes if rung.gpu_decode else None
    if rung.tuned_loader:
        workers = loader_workers()
        tuned = fast_loader(dataset, config.batch_size, generator=generator, collate_fn=collate, workers=workers,
                            timeout=LOADER_TIMEOUT_S)
        return tuned, workers
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=config.batch_size, shuffle=True, num_workers=config.baseline_workers,
                        generator=generator, collate_fn=collate, drop_last=True,
                        timeout=LOADER_TIMEOUT_S if config.baseline_workers else 0)
    return loader, config.baseline_workers


def next_batch(source: Iterator[Any], rung: Rung) -> Any:
    """The next batch, or LoaderStalledError in place of the DataLoader's bare timeout."""
    try:
        return next(source)
    except RuntimeError as error:
        if "DataLoader timed out" not in str(error):
            raise
        raise LoaderStalledError(f"rung {rung.index} ({rung.name}): {error}, so a worker lost a batch "
                                 "(its error is above)") from None


def run_rung(config: BenchConfig, rung: Rung, progress: Any = None) -> RungResult:
    torch.manual_seed(config.seed)
    cuda = config.device.startswith("cuda")
    model: nn.Module = build_model(config.model, config.classes).to(config.device)
    model = optimize_model(model, compile=rung.compile, compile_mode=config.compile_mode,
                           channels_last=rung.channels_last, checkpoint=rung.checkpoint)
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=0.9)
    precision = MixedPrecision(config.device, enabled=rung.amp)
    loss_fn = nn.CrossEntropyLoss()
    loader, workers = _loader(config, rung)
    result = RungResult(rung=rung, workers=workers)
    source = batches(loader)
    model.train()
    sampler: UtilizationSampler | None = None
    for step in range(config.warmup + config.steps):
        if step == config.warmup:
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            sampler = UtilizationSampler(config.device).__enter__()
        started = time.perf_counter()
        images, labels = next_batch(source, rung)
        if rung.gpu_decode:
            images, labels = decode_batch(images, config.device), labels.to(config.device, non_blocking=True)
            if rung.channels_last:
                images = images.contiguous(memory_format=torch.channels_last)
        elif rung.tuned_loader:
            images, labels = to_device((images, labels), config.device, channels_last=rung.channels_last)
        else:
            images, labels = images.to(config.device), labels.to(config.device)  # plain blocking copies
        data_ready = time.perf_counter()
        with precision.autocast():
            loss = loss_fn(model(images), labels)
        precision.backward_and_step(loss, optimizer)
        result.losses.append(float(loss.item()))  # .item() waits for the GPU: the step is complete here
        finished = time.perf_counter()
        if step >= config.warmup:
            result.step_times.append(finished - started)
            result.data_times.append(data_ready - started)
        if progress is not None:
            progress.update(1)
    if sampler is not None:
        sampler.__exit__()
        result.gpu_utilization = sampler.average
    if cuda:
        result.peak_memory = torch.cuda.max_memory_allocated()
    del loader, source
    return result


def is_conv_net(model: str) -> bool:
    return model in CONV_NETS
