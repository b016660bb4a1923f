"""What `pudev verify` judges (Facts), gathered from torch, NVML, the image record,
/proc/cpuinfo and the environment. Kept apart from the decisions so those can be tested
without a GPU."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pudev.common.errors import PudevError
from pudev.image.compilers.compile_status import CompileFacts
from pudev.image.nvml import NvmlUnavailableError, PynvmlSource
from pudev.image.record import RECORD_PATH, ImageRecord, gcc_major, load
from pudev.image.verify_network import NetworkFacts


@dataclass
class Facts:
    expected_cuda: str
    torch_version: str
    torch_cuda: str | None
    cuda_available: bool
    device_count: int
    driver: str | None  # None when NVML is not reachable
    nvml_error: str = ""
    gpu_memory: list[tuple[str, int, int]] = field(default_factory=list)  # (name, free, total)
    gpu_capabilities: list[tuple[str, str]] = field(default_factory=list)  # (name, "9.0")
    machine: str = ""  # platform.machine(): x86_64, aarch64; "" when not gathered
    cpu: str = ""  # cpu_name(): "NVIDIA Grace (Neoverse V2)", an x86 model name, or the raw ARM ids
    torch_arch_list: list[str] = field(default_factory=list)  # torch.cuda.get_arch_list(): sm_90, compute_90
    cudnn_version: int | None = None
    cudnn_usable: bool | None = None  # None: not tried (no GPU)
    nccl_version: str | None = None
    cuda_home: str = ""
    toolkit_version: str | None = None
    host_compiler: str = "g++"
    host_compiler_major: int | None = None
    toolkit_max_gcc: int | None = None
    toolkit_arches: list[tuple[str, str, str]] = field(default_factory=list)  # installed (version, min, max arch)
    shm_bytes: int = 0
    pinned_ok: bool | None = None  # None: not tried (no GPU)
    pinned_error: str = ""
    network: NetworkFacts = field(default_factory=NetworkFacts)  # verbs libraries, RDMA devices, ssh
    compile: CompileFacts = field(default_factory=CompileFacts)  # compiler cache, compile jobs
    mirrors: dict[str, str] = field(default_factory=dict)  # `pudev mirror --show`: {"apt": "aliyun", ...}
    torch_wheels: str = ""  # the mirror's folder of torch's own wheels for this torch ('' for none)
    hf_endpoint: str = ""  # where Hugging Face downloads go ('' for huggingface.co)


def shm_size(path: str = "/dev/shm") -> int:
    return shutil.disk_usage(path).total if os.path.isdir(path) else 0


_NVCC_RELEASE = re.compile(r"release (\d+\.\d+),")


def nvcc_release(output: str) -> str | None:
    """"12.1" from `nvcc --version` ("Cuda compilation tools, release 12.1, V12.1.105")."""
    match = _NVCC_RELEASE.search(output)
    return match.group(1) if match else None


def toolkit_version(cuda_home: str) -> str | None:
    """"12.1" for the toolkit at cuda_home: its version.json, else what its nvcc says."""
    if not cuda_home or not (Path(cuda_home) / "bin" / "nvcc").is_file():
        return None  # a toolkit whose compiler is gone is no toolkit, whatever its version.json says
    try:
        data = json.loads((Path(cuda_home) / "version.json").read_text())
        full = str(data.get("cuda", {}).get("version", ""))
        return ".".join(full.split(".")[:2]) or None
    except (OSError, ValueError):
        pass
    # Toolkits installed without version.json (some distribution packages, pip-assembled trees): ask nvcc.
    try:
        output = subprocess.run([str(Path(cuda_home) / "bin" / "nvcc"), "--version"], capture_output=True,
                                text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return nvcc_release(output)


# (CPU implementer, CPU part) of the ARM cores NVIDIA pairs with its GPUs: Grace reports Arm's
# Neoverse V2; DGX Spark's GB10 (MediaTek) mixes Cortex-X925 and Cortex-A725 cores.
_GRACE = {("0x41", "0xd4f")}
_GB10 = {("0x41", "0xd85"), ("0x41", "0xd87")}


def _cpuinfo_blocks(cpuinfo: str) -> list[dict[str, str]]:
    """/proc/cpuinfo as one {lowercased key: value} per block (one block per CPU)."""
    blocks = []
    for text in cpuinfo.split("\n\n"):
        pairs = (line.partition(":") for line in text.splitlines() if ":" in line)
        block = {key.strip().lower(): value.strip() for key, _, value in pairs}
        if block:
            blocks.append(block)
    return blocks


def cpu_name(machine: str, cpuinfo: str) -> str:
    """The CPU as /proc/cpuinfo names it. arm64 kernels print no model name, only ids:
    NVIDIA's pairings are named, a model name is used where one is printed, else the ids."""
    blocks = _cpuinfo_blocks(cpuinfo)
    model = next((block["model name"] for block in blocks if block.get("model name")), "")
    cores = {(block["cpu implementer"], block["cpu part"]) for block in blocks
             if "cpu implementer" in block and "cpu part" in block}
    if machine != "aarch64" or not cores:
        return model
    if cores <= _GRACE:
        return "NVIDIA Grace (Neoverse V2)"
    if cores <= _GB10:
        return "DGX Spark GB10 (Cortex-X925 + A725)"
    return model or ", ".join(f"CPU implementer {implementer} part {part}" for implementer, part in sorted(cores))


def read_cpuinfo(path: str = "/proc/cpuinfo") -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""  # not Linux, or /proc not mounted: the CPU goes unnamed


def toolkit_arches(record: ImageRecord, raw: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(version, min_arch, max_arch) of each installed toolkit. ToolkitRecord does not read the
    arch range, so it comes from the raw record; an older record without one leaves it out."""
    ranges = {str(t.get("version")): (t.get("min_arch"), t.get("max_arch")) for t in raw.get("toolkits", [])}
    found = []
    for toolkit in record.toolkits:
        low, high = ranges.get(toolkit.version, (None, None))
        if toolkit.installed and isinstance(low, str) and isinstance(high, str):
            found.append((toolkit.version, low, high))
    return found


def mirror_facts() -> tuple[dict[str, str], str, str]:
    from pudev.mirror import models, switch, torch_wheels
    from pudev.mirror.mirror_files import MirrorFiles

    files = MirrorFiles(root=Path("/"), home=Path.home())
    try:
        state = switch.active(files)
    except (OSError, PudevError):
        state = {}
    return state, torch_wheels.folder_for(state.get("pip", "")), models.endpoint(os.environ, "/", str(files.home))


def collect() -> Facts:
    import torch

    from pudev.image import verify_network
    from pudev.image.compilers import compile_status as compile_facts

    record = load()
    cuda_home = os.environ.get("CUDA_HOME", "")
    active = toolkit_version(cuda_home)
    toolkit = next((t for t in record.toolkits if t.version == active), None)
    flags = os.environ.get("NVCC_PREPEND_FLAGS", "").split()
    compiler = flags[flags.index("-ccbin") + 1] if "-ccbin" in flags[:-1] else "g++"
    try:
        compiler_major: int | None = gcc_major(compiler)
    except (OSError, ValueError):
        compiler_major = None
    facts = Facts(
        expected_cuda=record.cuda, torch_version=torch.__version__, torch_cuda=torch.version.cuda,
        cuda_available=torch.cuda.is_available(), device_count=torch.cuda.device_count(), driver=None,
        cudnn_version=torch.backends.cudnn.version(), cuda_home=cuda_home, toolkit_version=active,
        host_compiler=compiler, host_compiler_major=compiler_major,
        toolkit_max_gcc=toolkit.max_gcc if toolkit else None, shm_bytes=shm_size(),
        toolkit_arches=toolkit_arches(record, json.loads(RECORD_PATH.read_text())),
        machine=platform.machine(), cpu=cpu_name(platform.machine(), read_cpuinfo()),
        network=verify_network.collect(), compile=compile_facts.collect(),
    )
    facts.mirrors, facts.torch_wheels, facts.hf_endpoint = mirror_facts()
    try:
        facts.nccl_version = ".".join(map(str, torch.cuda.nccl.version())) if torch.distributed.is_nccl_available() \
            else None
    except (RuntimeError, AttributeError):
        facts.nccl_version = None
    try:
        source = PynvmlSource()
        facts.driver = source.driver_version()
        facts.gpu_memory = [(gpu.name, gpu.memory_free, gpu.memory_total) for gpu in source.snapshot()]
        source.close()
    except NvmlUnavailableError as error:
        facts.nvml_error = str(error).split(" (NVML: ")[-1].rstrip(")")
    if facts.cuda_available:
        facts.torch_arch_list = list(torch.cuda.get_arch_list())
        for index in range(facts.device_count):
            major, minor = torch.cuda.get_device_capability(index)
            facts.gpu_capabilities.append((torch.cuda.get_device_name(index), f"{major}.{minor}"))
        _try_gpu_paths(facts)
    return facts


def _try_gpu_paths(facts: Facts) -> None:
    import torch

    try:
        conv = torch.nn.Conv2d(3, 8, 3).cuda()
        conv(torch.randn(1, 3, 16, 16, device="cuda"))
        torch.cuda.synchronize()
        facts.cudnn_usable = True
    except RuntimeError:
        facts.cudnn_usable = False
    try:
        buffer = torch.empty(64 * 1024 * 1024, dtype=torch.uint8, pin_memory=True)
        facts.pinned_ok = bool(buffer.is_pinned())
    except RuntimeError as error:
        facts.pinned_ok, facts.pinned_error = False, str(error).splitlines()[0]
