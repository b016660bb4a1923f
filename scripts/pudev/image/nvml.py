"""NVML, the driver's management library, behind one small interface so verify,
gpumon and bench can be tested with a fake (tests/unit) and run for real."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


class NvmlUnavailableError(Exception):
    """No NVIDIA driver is reachable from this container."""


NO_DRIVER_HINT = ("no NVIDIA driver is visible in this container: run it with `--gpus all` on a host with the "
                  "NVIDIA driver and the NVIDIA Container Toolkit")


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    name: str
    memory_used: int  # bytes; 0 when the driver does not say


@dataclass(frozen=True)
class GpuSnapshot:
    index: int
    name: str
    utilization: int  # percent of the last sample period the GPU was busy
    memory_used: int
    memory_total: int
    temperature: int  # degrees C
    power_draw: float  # watts
    power_limit: float
    processes: list[GpuProcess] = field(default_factory=list)

    @property
    def memory_free(self) -> int:
        return self.memory_total - self.memory_used


class NvmlSource(Protocol):
    def driver_version(self) -> str: ...
    def snapshot(self) -> list[GpuSnapshot]: ...
    def utilization(self, index: int) -> int: ...
    def close(self) -> None: ...


def _process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"  # another PID namespace (the host's, or another container's)


class PynvmlSource:
    """The real thing, through nvidia-ml-py (module pynvml)."""

    def __init__(self) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception as error:  # pynvml raises NVMLError subclasses or OSError for a missing library
            raise NvmlUnavailableError(f"{NO_DRIVER_HINT} (NVML: {error})") from None
        self._nvml: Any = pynvml

    def driver_version(self) -> str:
        version = self._nvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)

    def utilization(self, index: int) -> int:
        handle = self._nvml.nvmlDeviceGetHandleByIndex(index)
        return int(self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu)

    def _optional(self, call: Any, *args: Any, default: Any = 0) -> Any:
        try:
            return call(*args)
        except self._nvml.NVMLError:
            return default  # e.g. power readings on GPUs that do not report them

    def snapshot(self) -> list[GpuSnapshot]:
        nvml = self._nvml
        gpus = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = nvml.nvmlDeviceGetName(handle)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            processes = [GpuProcess(p.pid, _process_name(p.pid), int(p.usedGpuMemory or 0))
                         for p in self._optional(nvml.nvmlDeviceGetComputeRunningProcesses, handle, default=[])]
            rates = self._optional(nvml.nvmlDeviceGetUtilizationRates, handle, default=None)
            gpus.append(GpuSnapshot(
                index=index,
                name=name.decode() if isinstance(name, bytes) else str(name),
                utilization=int(rates.gpu) if rates is not None else 0,
                memory_used=int(memory.used), memory_total=int(memory.total),
                temperature=int(self._optional(nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU)),
                power_draw=self._optional(nvml.nvmlDeviceGetPowerUsage, handle) / 1000.0,
                power_limit=self._optional(nvml.nvmlDeviceGetEnforcedPowerLimit, handle) / 1000.0,
                processes=processes,
            ))
        return gpus

    def close(self) -> None:
        self._nvml.nvmlShutdown()
