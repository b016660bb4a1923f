"""What the world has of a torch release, asked where users get it: the package index
(the newest release, and which CUDA build `pip install torch` gives on each platform)
and the registry (the official images' tags, and NVIDIA's CUDA images). `pudev new-torch`
and its daily workflow decide from these answers alone."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

from pudev.common.errors import PudevError
from pudev.common.lock_file import pinned
from pudev.common.versions import release
from pudev.devtools.lock import PLATFORM_TAGS, uv_command
from pudev.paths import REPO_ROOT
from pudev.registry.client import RegistryClient

OFFICIAL_REPOSITORY = "pytorch/pytorch"
CUDA_REPOSITORY = "nvidia/cuda"
# The official CUDA runtime tags: 2.15.0-cuda13.2-cudnn9-runtime (pytorch's docker.Makefile).
_OFFICIAL_TAG = r"{torch}-cuda(?P<cuda>\d+\.\d+)-cudnn(?P<cudnn>\d+)-runtime"
# torch's CUDA runtime dependency names its release: nvidia-cuda-runtime-cu12==12.8.90, nvidia-cuda-runtime==13.2.86.
_RUNTIME = re.compile(r"nvidia-cuda-runtime(-cu\d+)?")


@dataclass(frozen=True)
class IndexBuild:
    """What `pip install torch[==VERSION]` resolves to on one platform."""

    version: str
    cuda: str  # "" for a CPU-only build
    torchvision: str = ""  # the torchvision release that requires exactly this torch


def resolve(requirements: Iterable[str], *, platform: str, python: str) -> dict[str, str]:
    """name -> version, as uv resolves `requirements` on the default index for `platform`: the user's own
    index settings (a mirror) apply, and only metadata is read, never the wheels."""
    wanted = " ".join(requirements)
    environment = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    command = [uv_command(), "pip", "compile", "-", "--quiet", "--no-header", "--no-annotate",
               "--python-version", python, "--python-platform", PLATFORM_TAGS[platform]]
    result = subprocess.run(command, input="\n".join(requirements) + "\n", capture_output=True, text=True,
                            check=False, cwd=REPO_ROOT, env=environment, timeout=300)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise PudevError(f"the package index could not resolve {wanted} for {platform} (Python {python}): "
                         f"{last}; check the index settings (UV_INDEX_URL, /etc/uv/uv.toml) and the network")
    return pinned(result.stdout)


def torch_build(requirement: str, *, platform: str, python: str) -> IndexBuild:
    """What `pip install torch torchvision` gives for `requirement` (torch, or torch==X) on `platform`."""
    pins = resolve([requirement, "torchvision"], platform=platform, python=python)
    if "torch" not in pins:
        raise PudevError(f"the package index resolved {requirement} for {platform} without a torch release")
    runtime = next((version for name, version in pins.items() if _RUNTIME.fullmatch(name)), "")
    return IndexBuild(pins["torch"], ".".join(runtime.split(".")[:2]), pins.get("torchvision", ""))


def official_cudas(client: RegistryClient, torch: str) -> dict[str, str]:
    """CUDA release -> the official runtime tag pytorch/pytorch publishes for `torch` (none yet: {})."""
    pattern = re.compile(_OFFICIAL_TAG.format(torch=re.escape(torch)))
    found: dict[str, tuple[int, str]] = {}
    for tag in client.list_tags(OFFICIAL_REPOSITORY):
        match = pattern.fullmatch(tag)
        if match and int(match["cudnn"]) >= found.get(match["cuda"], (0, ""))[0]:
            found[match["cuda"]] = (int(match["cudnn"]), tag)
    return {cuda: tag for cuda, (_, tag) in sorted(found.items(), key=lambda item: release(item[0]))}


def newest_cuda_tag(tags: Iterable[str], cuda: str, flavour: str) -> str:
    """The newest patch of NVIDIA's `cuda` image in `flavour` (devel-ubuntu24.04,
    cudnn-runtime-ubuntu24.04): 13.2.1-devel-ubuntu24.04 over 13.2.0-devel-ubuntu24.04; "" when none."""
    pattern = re.compile(rf"{re.escape(cuda)}\.(?P<patch>\d+)-{re.escape(flavour)}")
    patches = [(int(match["patch"]), tag) for tag in tags if (match := pattern.fullmatch(tag))]
    return max(patches)[1] if patches else ""
