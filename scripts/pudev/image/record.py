"""The image's own record of what it must contain (/etc/pudev/image.json).

Written once at build time: the record as the host planned it (one JSON value,
IMAGE_RECORD, from pudev.building.record: the variant, its inputs, the commit), plus
what only the build knows: each toolkit's path and host compiler, the user, the
packages installed from the lock and those the base shipped. Read by the in-image
tests and tools; what they do not read (every other variant field) stays in the
file, for `pudev record` and anything that reads it raw.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePosixPath
from typing import Any

from pudev.common.errors import PudevError
from pudev.common.lock_file import pinned
from pudev.common.variant import Toolkit, Variant, record_keys
from pudev.image.compilers.masquerade import next_on_path

# PUDEV_RECORD points the tools at another record (scripts/gpu-check.sh, outside the image).
RECORD_PATH = Path(os.environ.get("PUDEV_RECORD", "/etc/pudev/image.json"))
_DIGEST = re.compile(r"^(sha256:[0-9a-f]{64})?$")


@dataclass(frozen=True)
class ToolkitRecord:
    version: str
    path: str
    max_gcc: int
    host_compiler: str  # the g++ nvcc of this toolkit uses ("g++" or e.g. "g++-11")
    arch_list: str  # TORCH_CUDA_ARCH_LIST while this toolkit is active

    @property
    def installed(self) -> bool:
        """The record says what was built in; the disk says what is still there."""
        return Path(self.path, "bin", "nvcc").is_file()


@dataclass(frozen=True)
class ImageRecord:
    variant: str
    image: str
    torch: str
    cuda: str
    python: str
    default_toolkit: str
    cuda_arch_list: str
    cxx_standard: str
    mirror: str
    build_mirror: str
    user: str
    toolkits: list[ToolkitRecord]
    # What went into the build: name -> {"source": image or file, "digest": ...}, and the commit.
    inputs: dict[str, dict[str, str]] = field(default_factory=dict)
    revision: str = ""
    packages: dict[str, str] = field(default_factory=dict)  # what the image installed from its lock
    base_packages: dict[str, str] = field(default_factory=dict)  # what the base shipped (kept as it was)

    def toolkit(self, version: str) -> ToolkitRecord:
        for toolkit in self.toolkits:
            if toolkit.version == version:
                return toolkit
        raise KeyError(version)


def read_lock(path: Path) -> dict[str, str]:
    """name -> version of a lock, or of the base's package record (NAME==VERSION lines)."""
    return pinned(path.read_text())


def gcc_major(compiler: str = "g++") -> int:
    """The major version of `compiler` (a name on PATH or a path), asked of the real compiler: the
    compile workshop's g++ link would run it through ccache and needs the in-image tools, which the
    record step comes before."""
    if os.sep not in compiler:
        compiler = next_on_path(compiler, os.environ.get("PATH", "")) or compiler
    output = subprocess.run([compiler, "-dumpversion"], capture_output=True, text=True, check=True).stdout
    return int(output.strip().split(".")[0])


def host_compiler_for(max_gcc: int) -> str:
    """The g++ a toolkit's nvcc accepts: the default one when new enough is allowed,
    else the newest installed g++-N with N <= max_gcc."""
    if gcc_major() <= max_gcc:
        return "g++"
    for major in range(max_gcc, 4, -1):
        if shutil.which(f"g++-{major}"):
            return f"g++-{major}"
    raise SystemExit(f"record: no g++ <= {max_gcc} installed for a toolkit whose nvcc refuses newer ones")


# What the record step adds to the host's record (build_record below), beside the variant's own fields.
BUILD_KEYS = frozenset({"inputs", "revision", "user", "packages", "base_packages"})
TOOLKIT_BUILD_KEYS = frozenset({"path", "host_compiler"})


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {item.name for item in fields(cls)}
    return {key: value for key, value in data.items() if key in names}


def _refuse_unknown(found: set[str], known: set[str], where: str, data: dict[str, Any]) -> None:
    """A key this pudev does not declare: the image was built by a newer pudev, whose meaning we would drop."""
    unknown = sorted(found - known)
    if unknown:
        revision = data.get("revision") or "unknown"
        raise PudevError(f"{where} has fields this pudev does not know ({', '.join(unknown)}): the image was built "
                         f"by a newer pudev (source revision {revision}); read it with that image's own tools "
                         "(`pudev record` inside it), or rebuild the image with this checkout")


def from_dict(data: dict[str, Any], *, model: type[Variant] = Variant, where: str = "the image record"
              ) -> ImageRecord:
    """The fields the tools read, after checking that every key is one the variant model (`model`, as
    pudev.common.variant declares it) or the record step defines: an unknown one is refused, not dropped."""
    _refuse_unknown(set(data), record_keys(model) | BUILD_KEYS, where, data)
    toolkit_keys = {item.name for item in fields(Toolkit)} | TOOLKIT_BUILD_KEYS
    for toolkit in data["toolkits"]:
        _refuse_unknown(set(toolkit), toolkit_keys, f"{where} (toolkit {toolkit.get('version', '?')})", data)
    return _typed(data)


def _typed(data: dict[str, Any]) -> ImageRecord:
    toolkits = [ToolkitRecord(**_known(ToolkitRecord, toolkit)) for toolkit in data["toolkits"]]
    return ImageRecord(**{**_known(ImageRecord, data), "toolkits": toolkits})


def load(path: Path = RECORD_PATH) -> ImageRecord:
    return from_dict(json.loads(path.read_text()), where=str(path))


def _installed(planned: dict[str, Any], locks: Path | None, shipped: dict[str, str]) -> dict[str, str]:
    """The lock the record names, minus what the base ships: those were left as the base had them."""
    lock = planned.get("inputs", {}).get("lock")
    if lock is None:
        return {}  # nothing installed from a lock (scripts/gpu-check.sh: the machine's own packages)
    if locks is None:
        raise SystemExit(f"record: the record names the lock {lock['source']}: pass the folder holding it (--locks)")
    listed = read_lock(locks / PurePosixPath(lock["source"]).name)
    return {name: version for name, version in listed.items() if name not in shipped}


def build_record(planned: dict[str, Any], *, locks: Path | None, base_packages: Path, user: str) -> dict[str, Any]:
    """The planned record completed by what only the build knows; every planned key is kept as it is."""
    for name, item in planned.get("inputs", {}).items():
        if not _DIGEST.match(item["digest"]):  # e.g. a plan's <BASE_DIGEST> that nothing filled in
            raise SystemExit(f"record: input {name} has digest {item['digest']!r}, not sha256:HEX; "
                             "build with `pudev build`, or pull the inputs and run `pudev plan` again")
    toolkits = [{**toolkit, "path": f"/usr/local/cuda-{toolkit['version']}",
                 "host_compiler": host_compiler_for(int(toolkit["max_gcc"]))} for toolkit in planned["toolkits"]]
    shipped = read_lock(base_packages)
    return {**planned, "toolkits": toolkits, "user": user, "packages": _installed(planned, locks, shipped),
            "base_packages": shipped}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pudev.image.record")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print the record")
    show.add_argument("path", nargs="?", default=str(RECORD_PATH))
    writer = commands.add_parser("write", help="write the record (build time)")
    writer.add_argument("path")
    writer.add_argument("--planned", required=True, help="the record as the host planned it (JSON)")
    writer.add_argument("--locks", default="", help="the folder holding the lock the record names")
    writer.add_argument("--base-packages", required=True, help="NAME==VERSION lines: what the base shipped")
    writer.add_argument("--user", required=True, help="the image's default user")
    args = parser.parse_args(argv)
    if args.command == "show":
        print(Path(args.path).read_text(), end="")
        return 0
    try:
        planned = json.loads(args.planned)
    except json.JSONDecodeError as error:
        raise SystemExit(f"record: --planned is not JSON ({error}): pass IMAGE_RECORD as planned") from None
    data = build_record(planned, locks=Path(args.locks) if args.locks else None,
                        base_packages=Path(args.base_packages), user=args.user)
    # Every field the tools read is there before anything is written. The host that planned it is this
    # very checkout, so its keys are not judged here: readers refuse what they do not know.
    record = _typed(data)
    Path(args.path).parent.mkdir(parents=True, exist_ok=True)
    Path(args.path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    compilers = ", ".join(f"{t.version}: {t.host_compiler}" for t in record.toolkits)
    print(f"record: {args.path} ({record.variant}; host compilers {compilers})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
