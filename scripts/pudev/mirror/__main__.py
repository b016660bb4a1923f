"""`python -m pudev.mirror ...`: the build's and the image's mirror commands.

A build step (root, with the image's own pudev, before the first switch):
  save-originals             keep the base image's apt sources for `pudev mirror none`
Run time (`pudev mirror` in the image is this; the build runs it once for MIRROR):
  NAME                       as root: apt and the system-wide pip/uv/conda files (every
                             user); otherwise this user's own pip/uv/conda files
  --hf NAME                  the Hugging Face endpoint, for every user (root) or you
  --show                     print what each tool uses
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.common.one_line_parser import OneLineParser
from pudev.mirror import models, switch, torch_wheels
from pudev.mirror.catalogue import MIRROR_CHOICES, NO_MIRROR
from pudev.mirror.mirror_files import MirrorFiles


def _files(args: argparse.Namespace) -> MirrorFiles:
    return MirrorFiles(root=Path(args.root), home=Path(args.home or Path.home()))


def set_mirror(files: MirrorFiles, name: str, *, apt: bool) -> list[str]:
    """Root switches apt and the system-wide pip/uv/conda files (every user, every fresh
    home); anyone else switches their own pip/uv/conda files. Returns lines to print."""
    mirror = switch.lookup(name)
    if os.geteuid() == 0:
        if apt:
            switch.write_apt(files, mirror)
        lines = switch.write_tool_files(files, mirror, system=True)
    else:
        lines = switch.write_tool_files(files, mirror, system=False)
        if apt:
            lines.append(f"apt sources unchanged: they need root (`docker exec -u root CONTAINER pudev mirror {name}`)")
        still = [tool for tool in files.tools() if mirror is None and switch.system_state(files, tool) != NO_MIRROR]
        if still:
            lines.append(f"{', '.join(still)} still use the image-wide mirror: "
                         "`docker exec -u root CONTAINER pudev mirror none` turns it off for every user; "
                         "for you alone, set PIP_INDEX_URL and UV_DEFAULT_INDEX to the index you want")
    return lines


def set_hf(files: MirrorFiles, name: str) -> list[str]:
    system = os.geteuid() == 0
    switch.write_models(files, name, system=system)
    if name in models.HF_MIRRORS:
        url, run_by = models.HF_MIRRORS[name]
        return [f"Hugging Face downloads now go to {url}: {run_by}; it sees what you download "
                "(new Python processes; a variable set with -e HF_ENDPOINT wins)"]
    if not system and models.from_files(str(files.root), str(files.home)):
        return ["your own file still names an endpoint: remove it, or run `pudev mirror --hf none` again"]
    return []


def show(files: MirrorFiles) -> list[str]:
    """The state line, and where this image's CUDA builds of torch's packages come from."""
    state = switch.active(files)
    hf = models.state(models.endpoint(os.environ, str(files.root), str(files.home)))
    lines = [switch.format_state({**state, "hf": hf})]
    folder = torch_wheels.folder_for(state.get("pip", ""))
    if folder:
        lines.append(f"torch's {torch_wheels.torch_cuda_tag()} wheels (torchaudio and the like): "
                     f"pip install -f {folder} PACKAGE")
    return lines


def build_step(step: str, args: list[str], files: MirrorFiles) -> None:
    """The step a Dockerfile RUN calls before the first switch."""
    if step == "save-originals" and not args:
        switch.save_originals(files)
    else:
        raise PudevError(f"usage: python -m pudev.mirror {step} {BUILD_STEPS[step]}")


BUILD_STEPS = {"save-originals": ""}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = OneLineParser(prog="pudev mirror", description="Switch or show package mirrors.")
    parser.add_argument("name", nargs="?", choices=MIRROR_CHOICES, help="the mirror to switch to")
    parser.add_argument("--hf", choices=models.HF_CHOICES,
                        help="where Hugging Face downloads go (none: huggingface.co); opt-in: docs/using/mirrors.md")
    parser.add_argument("--show", action="store_true", help="print the mirror each tool uses")
    parser.add_argument("--no-apt", action="store_true", help="leave apt sources alone")
    parser.add_argument("--root", default="/", help=argparse.SUPPRESS)
    parser.add_argument("--home", default="", help=argparse.SUPPRESS)
    try:
        if argv and argv[0] in BUILD_STEPS:
            locations = argparse.ArgumentParser(add_help=False)
            locations.add_argument("--root", default="/")
            locations.add_argument("--home", default="")
            known, rest = locations.parse_known_args(argv[1:])
            build_step(argv[0], rest, _files(known))
            return 0
        args = parser.parse_args(argv)
        files = _files(args)
        lines = []
        if args.name is not None and not args.show:
            lines += set_mirror(files, args.name, apt=not args.no_apt)
        if args.hf is not None and not args.show:
            lines += set_hf(files, args.hf)
        for line in lines + show(files):
            print(line)
    except PudevError as error:
        print(f"pudev mirror: error: {error}", file=sys.stderr)
        return error.exit_code
    except OSError as error:
        print(f"pudev mirror: error: {error.strerror}: {error.filename}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
