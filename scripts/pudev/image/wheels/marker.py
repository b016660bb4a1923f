"""What a compiled wheel was built against, and whether this image matches it.

A wheel with C++/CUDA code links against one torch's C++ symbols and one CUDA runtime: on
another torch it imports with "undefined symbol". `pudev wheel` writes BuiltAgainst into the
wheel (MARKER_FILE in its .dist-info) and gives its version a local label (+pt241cu121, the
convention flash-attn's own wheels follow). Standard library only: pip's start-up reads it.
"""

from __future__ import annotations

import json
import sys
import zipfile
from dataclasses import asdict, dataclass
from importlib import metadata

MARKER_FILE = "pudev-built-against.json"
RECORD_PATH = "/etc/pudev/image.json"


@dataclass(frozen=True)
class BuiltAgainst:
    torch: str  # the installed torch's version, local label and all (2.4.1, 2.5.1+cu121)
    cuda: str  # torch's CUDA (torch.version.cuda)
    python: str  # 3.11
    arch_list: str = ""  # TORCH_CUDA_ARCH_LIST of the build
    toolkit: str = ""  # the nvcc that compiled it
    image: str = ""  # the image variant it was built in

    @property
    def label(self) -> str:
        """The local version label: pt241cu121."""
        public = self.torch.split("+")[0]
        return f"pt{public.replace('.', '')}cu{self.cuda.replace('.', '')}"

    def mismatch(self, here: BuiltAgainst) -> str:
        """Why a wheel built against self cannot run with `here` ('' when it can)."""
        problems = [f"{what} {mine} (this image: {theirs})" for what, mine, theirs in
                    (("torch", self.torch, here.torch), ("CUDA", self.cuda, here.cuda),
                     ("Python", self.python, here.python)) if mine != theirs]
        return ", ".join(problems)


def running_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def this_image() -> BuiltAgainst | None:
    """The torch, CUDA and Python of this image, without importing torch (pip's start-up is the caller)."""
    try:
        torch_version = metadata.version("torch")
        with open(RECORD_PATH, encoding="utf-8") as handle:
            record = json.load(handle)
    except (metadata.PackageNotFoundError, OSError, ValueError):
        return None
    return BuiltAgainst(torch=torch_version, cuda=str(record.get("cuda", "")), python=running_python(),
                        image=str(record.get("variant", "")))


def dist_info_dir(names: list[str]) -> str:
    """The wheel's NAME-VERSION.dist-info directory."""
    found = {name.split("/")[0] for name in names if name.split("/")[0].endswith(".dist-info")}
    if len(found) != 1:
        raise ValueError(f"expected one .dist-info directory, found {sorted(found) or 'none'}")
    return found.pop()


def read(wheel: str) -> BuiltAgainst | None:
    """The marker of a wheel file (None: a wheel `pudev wheel` did not mark)."""
    with zipfile.ZipFile(wheel) as archive:
        path = f"{dist_info_dir(archive.namelist())}/{MARKER_FILE}"
        if path not in archive.namelist():
            return None
        data = json.loads(archive.read(path))
    known = {key: str(value) for key, value in data.items() if key in BuiltAgainst.__dataclass_fields__}
    return BuiltAgainst(**known)


def to_json(against: BuiltAgainst) -> str:
    return json.dumps(asdict(against), indent=2, sort_keys=True) + "\n"
