"""`pudev inventory`: what is really inside this image, as JSON (read by the
host's `pudev manifest`): torch, CUDA and cuDNN versions, each toolkit's nvcc,
pip list, conda list where conda exists, and dpkg's package list."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pudev.image.record import load


def _run(*command: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    return result.stdout if result.returncode == 0 else ""


def collect() -> dict[str, Any]:
    import torch

    record = load()
    nvcc, toolkits = {}, []
    for toolkit in record.toolkits:
        output = _run(f"{toolkit.path}/bin/nvcc", "--version").strip().splitlines()
        nvcc[toolkit.version] = output[-2] if len(output) >= 2 else "missing"
        release = re.search(r"V(\d+\.\d+\.\d+)", nvcc[toolkit.version])
        toolkits.append({"version": toolkit.version, "path": toolkit.path,
                         "nvcc": release.group(1) if release else "missing"})
    packages = json.loads(_run(sys.executable, "-m", "pip", "list", "--format=json") or "[]")
    conda = json.loads(_run("conda", "list", "--json") or "[]") if shutil.which("conda") else None
    dpkg = [line.split("\t") for line in _run("dpkg-query", "-W", "-f=${Package}\t${Version}\t${Architecture}\n")
            .splitlines()]
    return {
        "variant": record.variant,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": sys.version.split()[0],
        "default_toolkit": record.default_toolkit,
        "nvcc": nvcc,
        "pip": [{"name": p["name"], "version": p["version"]} for p in packages],
        "conda": None if conda is None else [{"name": p["name"], "version": p["version"],
                                              "channel": p.get("channel", "")} for p in conda],
        "dpkg": [{"name": name, "version": version, "arch": arch} for name, version, arch in dpkg],
        "os": os_release(),
        "toolkits": toolkits,
        "record": asdict(record),
    }


def os_release(path: Path = Path("/etc/os-release")) -> dict[str, str]:
    """ID and VERSION_ID (debian 12, ubuntu 24.04): what OS package URLs name."""
    fields = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.lower(): fields.get(key, "").strip('"') for key in ("ID", "VERSION_ID")}


def main() -> int:
    print(json.dumps(collect(), indent=1, sort_keys=True))
    return 0
