"""Gather what `pudev verify` judges: from torch, NVML, the image record and the
environment. Kept apart from the decisions so those can be tested without a GPU."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from pudev.image.nvml import NvmlUnavailableError, PynvmlSource
from pudev.image.record import gcc_major, load
from pudev.image.verify import Facts, shm_size

_NVCC_RELEASE = re.compile(r"release (\d+\.\d+),")


def nvcc_release(output: str) -> str | None:
    """"12.1" from `nvcc --version` ("Cuda compilation tools, release 12.1, V12.1.105")."""
    match = _NVCC_RELEASE.search(output)
    return match.group(1) if match else None


def toolkit_version(cuda_home: str) -> str | None:
    """"12.1" for the toolkit at cuda_home: its version.json, else what its nvcc says."""
    if not cuda_home:
        return None
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


def collect() -> Facts:
    import torch

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
    )
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
