"""The folder of torch's own wheels, on a mirror, that matches this image's torch.

Packages built against one CUDA release of torch (torchaudio for a cu126 torch, say) live on
torch's own index, not on PyPI, whose builds follow PyPI's torch. pip is not pointed there for
every install: `--find-links` is read even under `--no-index`, so an offline install would wait on
the mirror. `pudev mirror --show` and `pudev verify` print the command instead."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from pudev.mirror.catalogue import MIRRORS, Mirror

_CUDA = re.compile(r"""^cuda\b[^=\n]*=\s*['"](\d+)\.(\d+)""", re.MULTILINE)


def torch_cuda_tag() -> str:
    """cu121 for the importable torch, read from torch/version.py (importing torch takes seconds);
    '' for a CPU build or no torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return ""
    try:
        text = (Path(spec.origin).parent / "version.py").read_text()
    except OSError:
        return ""
    match = _CUDA.search(text)
    return f"cu{match.group(1)}{match.group(2)}" if match else ""


def folder(mirror: Mirror | None, cuda_tag: str) -> str:
    """https://mirrors.aliyun.com/pytorch-wheels/cu121/, or '' where there is none to name."""
    if mirror is None or not mirror.torch_wheels or not cuda_tag:
        return ""
    return f"{mirror.torch_wheels}/{cuda_tag}/"


def folder_for(pip_state: str) -> str:
    """The folder for this image's torch on the mirror pip uses now (`pip` of switch.active)."""
    return folder(MIRRORS.get(pip_state), torch_cuda_tag())
