"""`cuda-switch`: choose the CUDA toolkit for the current shell.

`cuda-switch VERSION` prints shell assignments on stdout; the bash/zsh function
(docker/rootfs/etc/pudev/shell/cuda-switch.sh) evals them, and other shells can
`eval "$(cuda-switch VERSION)"`. Everything meant for the user goes to stderr.
It sets CUDA_HOME, PATH (toolkit bin first), LD_LIBRARY_PATH (no empty entries,
never a toolkit's lib64: torch loads its own CUDA libraries), the toolkit's own
TORCH_CUDA_ARCH_LIST unless the user chose one, and, where the default g++ is too
new for that toolkit's nvcc, NVCC_PREPEND_FLAGS='-ccbin g++-N'.
The record says which toolkits were built in; the disk decides which are there.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from pudev.image.record import RECORD_PATH, ImageRecord, ToolkitRecord, load
from pudev.image.verdict import Verdict

TOOLKIT_DIR = re.compile(r"^/usr/local/cuda(-\d+\.\d+)?(/|$)")
JIT_WARNING = (
    "note: torch.utils.cpp_extension.load() (JIT) does not check CUDA versions at all: with a "
    "mismatched toolkit it builds, then fails at import (e.g. libcudart.so.11.0: cannot open shared object file)"
)
# Set by the shell function: the output is being evaluated, so no hint about eval is needed.
EVAL_MARKER = "PUDEV_CUDA_SWITCH_EVAL"


def judge(toolkit_version: str, torch_cuda: str) -> Verdict:
    """Compare a toolkit with torch's CUDA the way torch.utils.cpp_extension does."""
    if toolkit_version.split(".")[0] != torch_cuda.split(".")[0]:
        return Verdict("fail", (
            f"CUDA {toolkit_version} does not match torch's CUDA {torch_cuda}: building extensions (setup.py / "
            f"BuildExtension) fails with \"The detected CUDA version ({toolkit_version}) mismatches the version that "
            f"was used to compile PyTorch ({torch_cuda}). Please make sure to use the same CUDA versions.\""))
    if toolkit_version != torch_cuda:
        return Verdict("warn", (
            f"CUDA {toolkit_version} vs torch's {torch_cuda}: a minor mismatch; torch warns \"The detected CUDA "
            f"version ({toolkit_version}) has a minor version mismatch with the version that was used to compile "
            f"PyTorch ({torch_cuda}). Most likely this shouldn't be a problem.\""))
    return Verdict("ok", f"CUDA {toolkit_version} matches torch's CUDA {torch_cuda}")


def _clean_path(value: str, *, drop: re.Pattern[str]) -> list[str]:
    return [entry for entry in value.split(":") if entry and not drop.match(entry)]


def _arch_list(record: ImageRecord, toolkit: ToolkitRecord, current: str) -> str:
    """The toolkit's own list, unless the user set one that is no toolkit's default."""
    defaults = {t.arch_list for t in record.toolkits} | {record.cuda_arch_list}
    return toolkit.arch_list if not current or current in defaults else current


def environment_for(record: ImageRecord, toolkit: ToolkitRecord, env: dict[str, str]) -> dict[str, str | None]:
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
        "TORCH_CUDA_ARCH_LIST": _arch_list(record, toolkit, env.get("TORCH_CUDA_ARCH_LIST", "")),
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


def installed(record: ImageRecord) -> list[ToolkitRecord]:
    return [toolkit for toolkit in record.toolkits if toolkit.installed]


def status_lines(record: ImageRecord, env: dict[str, str]) -> list[str]:
    current = active_version(record, env)
    lines = []
    for toolkit in record.toolkits:
        marker = "*" if toolkit.version == current else " "
        if not toolkit.installed:
            lines.append(f"{marker} {toolkit.version}  {toolkit.path}  [missing: no {toolkit.path}/bin/nvcc]")
            continue
        verdict = judge(toolkit.version, record.cuda)
        lines.append(f"{marker} {toolkit.version}  {toolkit.path}  host compiler {toolkit.host_compiler}  "
                     f"archs {toolkit.arch_list}  [{verdict.level}]")
    active = record.toolkit(current) if current else None
    if active is not None and not active.installed:
        lines.append(f"active: CUDA {current} (CUDA_HOME={env.get('CUDA_HOME')}), but it is missing from disk; "
                     f"switch to an installed one: {', '.join(t.version for t in installed(record)) or 'none'}")
    elif active is not None:
        verdict = judge(current, record.cuda)
        lines.append(f"active: CUDA {current} (CUDA_HOME={env.get('CUDA_HOME')}); {verdict.message}")
    else:
        lines.append(f"active: none of the installed toolkits (CUDA_HOME={env.get('CUDA_HOME', '')!r})")
    lines.append(JIT_WARNING)
    return lines


def _say(message: str) -> None:
    print(f"cuda-switch: {message}", file=sys.stderr)


def main(argv: list[str] | None = None, env: dict[str, str] | None = None, record_path: Path = RECORD_PATH) -> int:
    argv = sys.argv[1:] if argv is None else argv
    env = dict(os.environ) if env is None else env
    record = load(record_path)
    present = ", ".join(t.version for t in installed(record)) or "none"
    if not argv or argv[0] in ("--list", "-l", "--status"):
        for line in status_lines(record, env):
            print(line, file=sys.stderr)
        return 0 if installed(record) else 1  # a script that asks must learn that no toolkit is left
    if argv[0] in ("-h", "--help") or len(argv) > 1:
        print(f"usage: cuda-switch [VERSION | --list]   (installed: {present})", file=sys.stderr)
        return 0 if argv[0] in ("-h", "--help") else 2
    try:
        toolkit = record.toolkit(argv[0])
    except KeyError:
        _say(f"no CUDA {argv[0]} in this image; installed: {present}")
        return 2
    if not toolkit.installed:
        _say(f"CUDA {toolkit.version} was built into this image but {toolkit.path}/bin/nvcc is gone; "
             f"installed: {present}")
        return 2
    print(shell_assignments(environment_for(record, toolkit, env)))
    verdict = judge(toolkit.version, record.cuda)
    compiler = "" if toolkit.host_compiler == "g++" else f"; nvcc uses {toolkit.host_compiler}"
    _say(f"CUDA {toolkit.version} active ({toolkit.path}){compiler}")
    # The switch itself succeeds (nvcc, CUDA C++ builds and other toolkits' tools work), so a mismatch with
    # torch is a warning: only building torch extensions fails, and the message says so in torch's words.
    if verdict.level != "ok":
        _say(f"warning: {verdict.message}")
        _say(JIT_WARNING)
    if not env.get(EVAL_MARKER):
        _say(f"run as a program this changes nothing; apply it with: eval \"$(cuda-switch {toolkit.version})\"")
    return 0


if __name__ == "__main__":
    sys.exit(main())
