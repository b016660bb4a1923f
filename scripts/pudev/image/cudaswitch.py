"""`cuda-switch`: choose the CUDA toolkit for the current shell.

The shell function (docker/rootfs/etc/pudev/shell/cuda-switch.sh) evals what
this prints on stdout; everything meant for the user goes to stderr.
It sets CUDA_HOME, PATH (toolkit bin first), LD_LIBRARY_PATH (no empty entries,
never a toolkit's lib64: torch loads its own CUDA libraries) and, where the
default g++ is too new for that toolkit's nvcc, NVCC_PREPEND_FLAGS='-ccbin g++-N'.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from pudev.image.record import RECORD_PATH, ImageRecord, ToolkitRecord, load

TOOLKIT_DIR = re.compile(r"^/usr/local/cuda(-\d+\.\d+)?(/|$)")
JIT_WARNING = (
    "note: torch.utils.cpp_extension.load() (JIT) does not check CUDA versions at all: with a "
    "mismatched toolkit it builds, then fails at import (e.g. libcudart.so.11.0: cannot open shared object file)"
)


@dataclass(frozen=True)
class Verdict:
    level: str  # "ok", "warning" or "error"
    message: str


def judge(toolkit_version: str, torch_cuda: str) -> Verdict:
    """Compare a toolkit with torch's CUDA the way torch.utils.cpp_extension does."""
    if toolkit_version.split(".")[0] != torch_cuda.split(".")[0]:
        return Verdict("error", (
            f"CUDA {toolkit_version} does not match torch's CUDA {torch_cuda}: building extensions (setup.py / "
            f"BuildExtension) fails with \"The detected CUDA version ({toolkit_version}) mismatches the version that "
            f"was used to compile PyTorch ({torch_cuda}). Please make sure to use the same CUDA versions.\""))
    if toolkit_version != torch_cuda:
        return Verdict("warning", (
            f"CUDA {toolkit_version} vs torch's {torch_cuda}: a minor mismatch; torch warns \"The detected CUDA "
            f"version ({toolkit_version}) has a minor version mismatch with the version that was used to compile "
            f"PyTorch ({torch_cuda}). Most likely this shouldn't be a problem.\""))
    return Verdict("ok", f"CUDA {toolkit_version} matches torch's CUDA {torch_cuda}")


def _clean_path(value: str, *, drop: re.Pattern[str]) -> list[str]:
    return [entry for entry in value.split(":") if entry and not drop.match(entry)]


def environment_for(toolkit: ToolkitRecord, env: dict[str, str]) -> dict[str, str | None]:
    """The variables to set (None: unset) to make `toolkit` the active one."""
    path = [f"{toolkit.path}/bin", *_clean_path(env.get("PATH", ""), drop=TOOLKIT_DIR)]
    library_path = _clean_path(env.get("LD_LIBRARY_PATH", ""), drop=TOOLKIT_DIR)
    flags = re.sub(r"\s*-ccbin(=|\s+)\S+", "", env.get("NVCC_PREPEND_FLAGS", "")).strip()
    if toolkit.host_compiler != "g++":
        flags = f"-ccbin {toolkit.host_compiler} {flags}".strip()
    return {
        "CUDA_HOME": toolkit.path,
        "PATH": ":".join(dict.fromkeys(path)),
        "LD_LIBRARY_PATH": ":".join(library_path) or None,
        "NVCC_PREPEND_FLAGS": flags or None,
    }


def shell_assignments(changes: dict[str, str | None]) -> str:
    lines = []
    for name, value in changes.items():
        lines.append(f"unset {name}" if value is None else f"export {name}={shlex.quote(value)}")
    return "\n".join(lines)


def active_version(record: ImageRecord, env: dict[str, str]) -> str:
    home = env.get("CUDA_HOME", "")
    for toolkit in record.toolkits:
        if os.path.realpath(home) == os.path.realpath(toolkit.path):
            return toolkit.version
    return ""


def status_lines(record: ImageRecord, env: dict[str, str]) -> list[str]:
    current = active_version(record, env)
    lines = []
    for toolkit in record.toolkits:
        marker = "*" if toolkit.version == current else " "
        verdict = judge(toolkit.version, record.cuda)
        lines.append(f"{marker} {toolkit.version}  {toolkit.path}  host compiler {toolkit.host_compiler}  "
                     f"[{verdict.level}]")
    if current:
        verdict = judge(current, record.cuda)
        lines.append(f"active: CUDA {current} (CUDA_HOME={env.get('CUDA_HOME')}); {verdict.message}")
    else:
        lines.append(f"active: none of the installed toolkits (CUDA_HOME={env.get('CUDA_HOME', '')!r})")
    lines.append(JIT_WARNING)
    return lines


def main(argv: list[str] | None = None, env: dict[str, str] | None = None, record_path: Path = RECORD_PATH) -> int:
    argv = sys.argv[1:] if argv is None else argv
    env = dict(os.environ) if env is None else env
    record = load(record_path)
    installed = ", ".join(t.version for t in record.toolkits)
    if not argv or argv[0] in ("--list", "-l", "--status"):
        for line in status_lines(record, env):
            print(line, file=sys.stderr)
        return 0
    if argv[0] in ("-h", "--help") or len(argv) > 1:
        print(f"usage: cuda-switch [VERSION | --list]   (installed: {installed})", file=sys.stderr)
        return 0 if argv[0] in ("-h", "--help") else 2
    try:
        toolkit = record.toolkit(argv[0])
    except KeyError:
        print(f"cuda-switch: no CUDA {argv[0]} in this image; installed: {installed}", file=sys.stderr)
        return 2
    print(shell_assignments(environment_for(toolkit, env)))
    verdict = judge(toolkit.version, record.cuda)
    compiler = "" if toolkit.host_compiler == "g++" else f"; nvcc uses {toolkit.host_compiler}"
    print(f"cuda-switch: CUDA {toolkit.version} active ({toolkit.path}){compiler}", file=sys.stderr)
    if verdict.level != "ok":
        print(f"cuda-switch: {verdict.level}: {verdict.message}", file=sys.stderr)
        print(f"cuda-switch: {JIT_WARNING}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
