"""What the world has of a torch release, asked where users get it: the default package index
(the newest release, the CUDA build `pip install torch` gives, its torchvision and its upload
time), torch's own index (which CUDA builds the release has, per platform) and the registry
(pytorch/pytorch's official tags, and NVIDIA's CUDA images). The decision reads these alone."""

from __future__ import annotations

import datetime
import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import tomllib

from pudev.common.errors import PudevError
from pudev.common.variant import cuda_tag
from pudev.common.versions import release
from pudev.devtools.lock import PLATFORM_TAGS, uv_compile
from pudev.paths import REPO_ROOT
from pudev.registry.client import RegistryClient

OFFICIAL_REPOSITORY = "pytorch/pytorch"
CUDA_REPOSITORY = "nvidia/cuda"
# torch's own index: one folder per CUDA build (cu130/), as pytorch.org's install selector names them.
TORCH_INDEX = "https://download.pytorch.org/whl"
# The official CUDA runtime tags: 2.15.0-cuda13.2-cudnn9-runtime (pytorch's docker.Makefile).
_OFFICIAL_TAG = r"{torch}-cuda(?P<cuda>\d+\.\d+)-cudnn(?P<cudnn>\d+)-runtime"
# torch's CUDA runtime dependency names its release: nvidia-cuda-runtime-cu12==12.8.90, nvidia-cuda-runtime==13.2.86.
_RUNTIME = re.compile(r"nvidia-cuda-runtime(-cu\d+)?")
# What uv says when an index simply lacks the release (any other failure is a question not answered).
_ABSENT = ("there is no version of", "was not found in the package registry", "has no wheels with a matching",
           "but not at the requested version", "is available and you require")
# Indexes the user adds beside the default one: asking torch's own index alone leaves them out.
_EXTRA_INDEXES = ("UV_INDEX", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS", "PIP_EXTRA_INDEX_URL")


@dataclass(frozen=True)
class IndexBuild:
    """What `pip install torch[==VERSION]` resolves to on linux/amd64."""

    version: str
    cuda: str  # "" for a CPU-only build
    torchvision: str = ""  # the torchvision release that requires exactly this torch
    uploaded: str = ""  # YYYY-MM-DD the index received the torch wheel ("" where it does not say)


@dataclass(frozen=True)
class Answers:
    """What the index and the registry said of the release."""

    build: IndexBuild  # the release, as the default index gives it
    builds: frozenset[tuple[str, str]]  # (CUDA, platform) pairs torch's own index has the release for
    official: dict[str, str]  # CUDA release -> pytorch/pytorch's runtime tag of it
    cuda_tags: tuple[str, ...] = field(default=())  # nvidia/cuda's tags

    @property
    def torch(self) -> str:
        return self.build.version


def _pylock(requirements: Iterable[str], *, platform: str, python: str, index: str = "",
            with_deps: bool = True) -> list[dict[str, Any]] | None:
    """The packages uv resolves `requirements` to (a pylock.toml's [[packages]]), on the default index (the
    user's own settings, a mirror included) or on `index` alone; None when the index lacks them. Only
    metadata is read, never the wheels."""
    wanted = " ".join(requirements)
    command = uv_compile("-", "--quiet", "--no-header", "--format", "pylock.toml", "--python-version", python,
                         "--python-platform", PLATFORM_TAGS[platform], *(["--index-url", index] if index else []),
                         *([] if with_deps else ["--no-deps"]))
    environment = {name: value for name, value in os.environ.items() if not (index and name in _EXTRA_INDEXES)}
    result = subprocess.run(command, input="\n".join(requirements) + "\n", capture_output=True, text=True,
                            check=False, cwd=REPO_ROOT, env=environment, timeout=300)
    if result.returncode != 0:
        if any(phrase in result.stderr for phrase in _ABSENT):
            return None
        # uv draws its answer with box characters: the last line, without them.
        last = (result.stderr.strip().splitlines() or ["no output"])[-1].strip(" \u00d7\u2570\u2500\u25b6")
        where = index or "the default package index (UV_INDEX_URL, /etc/uv/uv.toml)"
        raise PudevError(f"could not ask {where} for {wanted} on {platform}: {last}; check the index and the "
                         "network, then run pudev new-torch again")
    return list(tomllib.loads(result.stdout).get("packages", []))


def torch_build(version: str, *, python: str) -> IndexBuild:
    """What `pip install torch[==version] torchvision` gives on linux/amd64 from the default index."""
    requirement = f"torch=={version}" if version else "torch"
    packages = _pylock([requirement, "torchvision"], platform="linux/amd64", python=python)
    if packages is None:
        raise PudevError(f"the package index has no {requirement} for Python {python} on linux/amd64; check "
                         "the version (pip index versions torch)")
    found = {str(package["name"]).lower(): package for package in packages}
    torch = found["torch"]
    runtime = next((str(p["version"]) for name, p in found.items() if _RUNTIME.fullmatch(name)), "")
    times = [wheel["upload-time"] for wheel in torch.get("wheels", []) if "upload-time" in wheel]
    uploaded = min(times).date().isoformat() if times and isinstance(min(times), datetime.datetime) else ""
    return IndexBuild(str(torch["version"]).split("+")[0], ".".join(runtime.split(".")[:2]),
                      str(found.get("torchvision", {}).get("version", "")).split("+")[0], uploaded)


def cuda_builds(version: str, cudas: Iterable[str], platforms: Iterable[str], *, python: str,
                index: str = TORCH_INDEX) -> frozenset[tuple[str, str]]:
    """The (CUDA, platform) pairs for which torch's own index (INDEX/cuXYZ) has `version`."""
    found = set()
    for cuda in sorted(set(cudas), key=release):
        for platform in sorted(set(platforms)):
            packages = _pylock([f"torch=={version}"], platform=platform, python=python,
                               index=f"{index.rstrip('/')}/{cuda_tag(cuda)}", with_deps=False)
            if packages is not None:
                found.add((cuda, platform))
    return frozenset(found)


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


def toolkit_wheels(cuda: str, *, python: str) -> tuple[str, str] | None:
    """(cuda-toolkit, nvidia-nvjitlink) versions of NVIDIA's newest wheels of `cuda` on the default index, what a
    stand-in toolkit is assembled from; None while NVIDIA has not published them."""
    major = cuda.split(".")[0]
    packages = _pylock([f"cuda-toolkit=={cuda}.*", f"nvidia-nvjitlink=={cuda}.*"], platform="linux/amd64",
                       python=python, with_deps=False)
    if packages is None:
        return None
    found = {str(package["name"]).lower(): str(package["version"]) for package in packages}
    toolkit, jitlink = found.get("cuda-toolkit", ""), found.get("nvidia-nvjitlink", "")
    return (toolkit, jitlink) if toolkit.startswith(f"{major}.") and jitlink else None
