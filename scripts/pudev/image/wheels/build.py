"""`pudev wheel SPEC...`: compile once per image. Builds wheels for this image's exact torch, CUDA,
Python and arch list (pip wheel --no-build-isolation: against the installed torch, never one pip
would fetch into an isolated build environment), marks each compiled wheel with what it was built
against (repack.py) and puts it in the wheelhouse, where pip and uv look by default
(PIP_FIND_LINKS / UV_FIND_LINKS): the next container installs it in seconds."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.common.table import render_table
from pudev.image.cudaswitch import active_version, judge
from pudev.image.record import load
from pudev.image.wheels import marker, repack

DEFAULT_WHEELHOUSE = "/var/cache/pudev/wheels"


def wheelhouse_dir(option: str) -> Path:
    path = Path(option or os.environ.get("PUDEV_WHEELHOUSE") or DEFAULT_WHEELHOUSE)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise PudevError(f"--wheelhouse {path}: cannot create it ({error.strerror}); mount a writable volume there "
                         "(docker run -v pudev-wheels:/var/cache/pudev/wheels) or pass another --wheelhouse") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise PudevError(f"--wheelhouse {path}: not writable by uid {os.getuid()}; mount a writable volume there "
                         "or pass another --wheelhouse")
    return path


def built_against(arch_list: str) -> marker.BuiltAgainst:
    """This image as a build target: refuses a toolkit torch cannot build extensions with."""
    import torch

    record = load()
    toolkit = active_version(record, dict(os.environ))
    if not toolkit:
        raise PudevError(f"CUDA_HOME={os.environ.get('CUDA_HOME', '')!r} is none of this image's toolkits; "
                         "pick one: cuda-switch --list")
    verdict = judge(toolkit, torch.version.cuda or "")
    if verdict.level == "fail":
        raise PudevError(f"{verdict.message.split(':')[0]}: extensions for this torch cannot be built with it; "
                         f"switch back first: cuda-switch {record.default_toolkit}")
    here = marker.this_image()
    assert here is not None  # torch imported above and the record loaded
    return marker.BuiltAgainst(torch=here.torch, cuda=torch.version.cuda or "", python=here.python,
                               arch_list=arch_list, toolkit=toolkit, image=record.variant)


def build(specs: list[str], wheelhouse: Path, arch_list: str, pip_args: list[str]) -> list[tuple[Path, str]]:
    against = built_against(arch_list)
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": arch_list}
    with tempfile.TemporaryDirectory(prefix="pudev-wheel-") as scratch:
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir",
                   scratch, *pip_args, *specs]
        if subprocess.call(command, env=env) != 0:
            raise PudevError(f"pip wheel {' '.join(specs)} failed (its output is above); nothing was added to "
                             f"{wheelhouse}")
        results = []
        for wheel in sorted(Path(scratch).glob("*.whl")):
            if marker.read(str(wheel)) is not None or not repack.has_compiled_code(wheel):
                target = wheelhouse / wheel.name  # already marked, or pure Python: any torch will do
                shutil.copyfile(wheel, target)
                results.append((target, "as built (no compiled code)" if marker.read(str(wheel)) is None
                                else "already marked"))
                continue
            results.append((repack.mark(wheel, against, wheelhouse), f"torch {against.torch}, CUDA {against.cuda}, "
                                                                     f"Python {against.python}, arch {arch_list}"))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pudev wheel", description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="+", metavar="SPEC", help="what pip would install: NAME==VERSION, a path, ...")
    parser.add_argument("--wheelhouse", default="", metavar="DIR",
                        help=f"where wheels go (default: $PUDEV_WHEELHOUSE or {DEFAULT_WHEELHOUSE})")
    parser.add_argument("--arch-list", default="", metavar="LIST",
                        help="TORCH_CUDA_ARCH_LIST to build for (default: the active one)")
    parser.add_argument("--pip-arg", action="append", default=[], metavar="ARG", help="passed on to pip wheel")
    args = parser.parse_args(argv)
    arch_list = args.arch_list or os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    try:
        house = wheelhouse_dir(args.wheelhouse)
        results = build(args.specs, house, arch_list, args.pip_arg)
    except PudevError as error:
        print(f"pudev wheel: error: {error}", file=sys.stderr)
        return error.exit_code
    print(render_table(["wheel", "built against"], [[path.name, what] for path, what in results]))
    print(f"pudev wheel: {len(results)} wheel(s) in {house}; pip and uv here find them by default")
    return 0
