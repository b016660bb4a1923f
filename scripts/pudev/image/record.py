"""The image's own record of what it must contain (/etc/pudev/image.json).

Written once at build time from the variant's build arguments and the lock;
read by the in-image tests and tools, and by the host to compute tags.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

# PUDEV_RECORD points the tools at another record (scripts/gpu-check.sh, outside the image).
RECORD_PATH = Path(os.environ.get("PUDEV_RECORD", "/etc/pudev/image.json"))
_LOCK_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


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


def normalize(name: str) -> str:
    """PEP 503 name normalisation, so lock names and installed names compare."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: Path) -> dict[str, str]:
    packages = {}
    for line in path.read_text().splitlines():
        match = _LOCK_LINE.match(line.strip())
        if match:
            packages[normalize(match.group(1))] = match.group(2)
    return packages


def gcc_major(compiler: str = "g++") -> int:
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


def parse_inputs(specs: list[str]) -> dict[str, dict[str, str]]:
    """["base=IMAGE=DIGEST", "lock L=FILE=sha256:HEX"] -> {"base": {"source": IMAGE, "digest": DIGEST}, ...}."""
    inputs = {}
    for spec in specs:
        name, source, digest = spec.split("=", 2)
        inputs[name] = {"source": source, "digest": "" if digest in ("", "sha256:") else digest}
    return inputs


def load(path: Path = RECORD_PATH) -> ImageRecord:
    data = json.loads(path.read_text())
    toolkits = [ToolkitRecord(**toolkit) for toolkit in data.pop("toolkits")]
    return ImageRecord(toolkits=toolkits, **data)


def write(args: argparse.Namespace) -> ImageRecord:
    toolkits = []
    for spec in args.toolkit:
        version, max_gcc, arch_list = spec.split(":", 2)
        toolkits.append(
            ToolkitRecord(
                version=version,
                path=f"/usr/local/cuda-{version}",
                max_gcc=int(max_gcc),
                host_compiler=host_compiler_for(int(max_gcc)),
                arch_list=arch_list,
            )
        )
    base_packages = read_lock(Path(args.base_packages))
    # The lock minus what the base ships: those were left as the base had them.
    installed = {name: version for name, version in read_lock(Path(args.lock)).items() if name not in base_packages}
    record = ImageRecord(
        variant=args.variant,
        image=args.image,
        torch=args.torch,
        cuda=args.cuda,
        python=args.python,
        default_toolkit=args.default_toolkit,
        cuda_arch_list=args.arch_list,
        cxx_standard=args.cxx_standard,
        mirror=args.mirror,
        build_mirror=args.build_mirror,
        user=args.user,
        toolkits=toolkits,
        inputs=parse_inputs(args.input),
        revision=args.revision,
        packages=installed,
        base_packages=base_packages,
    )
    Path(args.path).parent.mkdir(parents=True, exist_ok=True)
    Path(args.path).write_text(json.dumps(asdict(record), indent=2, sort_keys=True) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pudev.image.record")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print the record")
    show.add_argument("path", nargs="?", default=str(RECORD_PATH))
    writer = commands.add_parser("write", help="write the record (build time)")
    writer.add_argument("path")
    for option in ("lock", "variant", "image", "torch", "cuda", "python", "default-toolkit", "arch-list",
                   "cxx-standard"):
        writer.add_argument(f"--{option}", required=True)
    for option in ("mirror", "build-mirror", "user", "base-packages"):
        writer.add_argument(f"--{option}", required=True)
    writer.add_argument("--toolkit", action="append", required=True, help="VERSION:MAX_GCC:ARCH_LIST")
    writer.add_argument("--input", action="append", default=[], help="NAME=SOURCE=DIGEST: what went into the build")
    writer.add_argument("--revision", default="", help="the source commit")
    args = parser.parse_args(argv)
    if args.command == "write":
        record = write(args)
        compilers = ", ".join(f"{t.version}: {t.host_compiler}" for t in record.toolkits)
        print(f"record: {args.path} ({record.variant}; host compilers {compilers})")
    else:
        print(Path(args.path).read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
