"""This host's NVIDIA GPUs and driver: through NVML (nvidia-ml-py, where installed), else `nvidia-smi`, which
every driver ships. What neither can read is said with the reason and the fix, in the words of
docs/troubleshooting.md."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pudev.common.gpu_arch import arch_name, sm_name

SMI_QUERY = ["nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"]
# nvidia-smi of drivers older than R510 knows no compute_cap field.
SMI_QUERY_OLD = ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]
NVIDIA_PCI_VENDOR = "0x10de"

# docs/troubleshooting.md's fixes, by what the driver's tools say.
INSTALL_DRIVER = ("install the NVIDIA driver the tag table asks for (docs/quickstart.md#1-pick-a-tag); "
                  "`nvidia-smi` on the host must work")
MISMATCH = ("reboot the host, which loads the new module, then check that both agree: "
            "cat /proc/driver/nvidia/version; nvidia-smi")


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    capability: str  # "8.9"; "" where the tool could not tell

    def describe(self) -> str:
        if not self.capability:
            return f"{self.name} (compute capability unknown)"
        return f"{self.name}, {sm_name(self.capability)} ({arch_name(self.capability)})"


@dataclass(frozen=True)
class HostGpus:
    """What the driver's tools said: the driver and its GPUs, or why there are none (and the fix)."""

    driver: str = ""
    gpus: tuple[Gpu, ...] = ()
    source: str = ""  # NVML or nvidia-smi
    problem: str = ""
    fix: str = ""
    notes: tuple[str, ...] = field(default=())


def load_nvml() -> Any:
    """The NVML binding (nvidia-ml-py's module); ImportError where it is not installed."""
    import pynvml

    return pynvml


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def from_nvml() -> HostGpus:
    try:
        nvml = load_nvml()
    except ImportError:
        return HostGpus(problem="nvidia-ml-py is not installed")
    try:
        nvml.nvmlInit()
    except Exception as error:  # NVMLError subclasses, or OSError for a missing library
        return HostGpus(problem=f"NVML: {error}")
    try:
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        gpus = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
            gpus.append(Gpu(index, _text(nvml.nvmlDeviceGetName(handle)), f"{major}.{minor}"))
        return HostGpus(driver, tuple(gpus), "NVML")
    except Exception as error:
        return HostGpus(problem=f"NVML: {error}")
    finally:
        with contextlib.suppress(Exception):  # nothing to release after a failed start
            nvml.nvmlShutdown()


def _smi(command: list[str]) -> subprocess.CompletedProcess[str] | str:
    try:
        return subprocess.run(command, capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"nvidia-smi: {error}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def from_nvidia_smi() -> HostGpus:
    if shutil.which("nvidia-smi") is None:
        return HostGpus(problem="no nvidia-smi on PATH")
    result = _smi(SMI_QUERY)
    if not isinstance(result, str) and result.returncode != 0 and "compute_cap" in result.stdout + result.stderr:
        result = _smi(SMI_QUERY_OLD)
    if isinstance(result, str):
        return HostGpus(problem=result)
    if result.returncode != 0:
        return HostGpus(problem=f"nvidia-smi: {_last_line(result.stdout + chr(10) + result.stderr)}")
    gpus, drivers = [], set()
    for index, line in enumerate(row for row in result.stdout.splitlines() if row.strip()):
        fields = [item.strip() for item in line.split(",")]
        name, capability = fields[0], fields[1] if len(fields) == 3 else ""
        drivers.add(fields[-1])
        valid = capability.count(".") == 1 and capability.replace(".", "").isdigit()
        gpus.append(Gpu(index, name, capability if valid else ""))
    return HostGpus(next(iter(sorted(drivers)), ""), tuple(gpus), "nvidia-smi")


def nvidia_on_pci(root: Path = Path("/sys/bus/pci/devices")) -> bool:
    """Whether an NVIDIA display or 3D controller sits on the PCI bus, driver or not."""
    try:
        devices = list(root.iterdir())
    except OSError:
        return False
    for device in devices:
        try:
            vendor, kind = (device / "vendor").read_text().strip(), (device / "class").read_text().strip()
        except OSError:
            continue
        if vendor == NVIDIA_PCI_VENDOR and kind.startswith("0x03"):
            return True
    return False


def read_gpus(pci_root: Path = Path("/sys/bus/pci/devices")) -> HostGpus:
    """NVML first, then nvidia-smi; where neither answers, why (the first tool's reason that says most)."""
    nvml = from_nvml()
    if not nvml.problem:
        return nvml
    smi = from_nvidia_smi()
    if not smi.problem:
        return HostGpus(smi.driver, smi.gpus, smi.source, notes=(f"NVML unread ({nvml.problem})",))
    said = f"{nvml.problem}; {smi.problem}"
    if "mismatch" in said.lower():
        return HostGpus(problem=f"the NVIDIA driver's libraries and its loaded module differ ({said})", fix=MISMATCH)
    on_bus = nvidia_on_pci(pci_root)
    if "no devices were found" in said.lower() and not on_bus:
        return HostGpus(problem=f"the NVIDIA driver is installed but finds no GPU ({said})")
    if on_bus:
        return HostGpus(problem=f"an NVIDIA GPU is on the PCI bus, but no NVIDIA driver answers ({said})",
                        fix=INSTALL_DRIVER)
    return HostGpus(problem=f"no NVIDIA GPU or driver found ({said})")
