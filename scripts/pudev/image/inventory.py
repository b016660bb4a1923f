"""`pudev inventory`: what is really inside this image, as JSON (read by the
host's `pudev manifest`): torch, CUDA and cuDNN versions, each toolkit's nvcc,
pip list, conda list where conda exists, dpkg's package list, and a census of
its files (so two builds that install the same packages differently differ)."""

from __future__ import annotations

import hashlib
import json
import os
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


def collect(*, files: bool = False) -> dict[str, Any]:
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
        **({"files": file_census()} if files else {}),
    }


# What a run makes or the kernel provides, not the image's files; and the engine's own per container.
NOT_IMAGE = ("/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp", "/var/cache", "/var/log", "/mnt", "/media")
ENGINE_FILES = ("/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/.dockerenv")
PACKAGE_FOLDERS = ("site-packages", "dist-packages")


def census_group(path: str) -> str:
    """A file's group: its Python package where it is in one, else its first three folders."""
    parts = path.split("/")
    for index, part in enumerate(parts[:-1]):
        if part in PACKAGE_FOLDERS:
            return "/".join(parts[:index + 2])
    return "/".join(parts[:4]) if len(parts) > 4 else "/".join(parts[:-1]) or "/"


def file_census(root: str = "/") -> dict[str, dict[str, Any]]:
    """Per group (census_group): how many files and links, their bytes, and a digest of their names,
    sizes and link targets."""
    entries: dict[str, list[str]] = {}
    skipped = {os.path.join(root, path.lstrip("/")) for path in (*NOT_IMAGE, *ENGINE_FILES)}
    for folder, folders, files in os.walk(root):
        folders[:] = [name for name in folders if os.path.join(folder, name) not in skipped]
        # A link to a folder is listed with the folders, and never walked: count it as the link it is.
        links = [name for name in folders if os.path.islink(os.path.join(folder, name))]
        for name in [*files, *links]:
            path = os.path.join(folder, name)
            if path in skipped:
                continue
            try:
                target = os.readlink(path) if os.path.islink(path) else None
                size = 0 if target is not None else os.lstat(path).st_size
            except OSError:
                continue  # gone while walking
            inside = "/" + os.path.relpath(path, root)  # the path as the image names it
            entries.setdefault(census_group(inside), []).append(f"{inside}\0{size}\0{target or ''}")
    census = {}
    for group, lines in sorted(entries.items()):
        lines.sort()
        census[group] = {"files": len(lines), "bytes": sum(int(line.split("\0")[1]) for line in lines),
                         "digest": hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]}
    return census


def os_release(path: Path = Path("/etc/os-release")) -> dict[str, str]:
    """ID and VERSION_ID (debian 12, ubuntu 24.04): what OS package URLs name."""
    fields = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.lower(): fields.get(key, "").strip('"') for key in ("ID", "VERSION_ID")}


def main(argv: list[str]) -> int:
    # --files: the census too (what `pudev manifest` compares); it walks the whole image, so only on request.
    print(json.dumps(collect(files="--files" in argv), indent=1, sort_keys=True))
    return 0
