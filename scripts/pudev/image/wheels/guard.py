"""pip's start-up in the image refuses, in one line, to install a wheel `pudev wheel` built against
another torch, CUDA or Python, instead of letting it fail at import with "undefined symbol".

The wheel's own metadata already pins its torch (repack.py), so pip and uv pass such a wheel
over when they find it in the wheelhouse; a wheel named on the command line would only meet
pip's long resolver report. Standard library only: it runs inside pip's start-up."""

from __future__ import annotations

import os
import sys
import zipfile

from pudev.image.wheels import marker


def is_pip_install(argv: list[str]) -> bool:
    """`pip install ...` or `python -m pip install ...` (['-m', 'install', ...] at start-up)."""
    if not argv or "install" not in argv:
        return False
    return os.path.basename(argv[0]).startswith("pip") or argv[0] == "-m"


def foreign_wheels(argv: list[str], here: marker.BuiltAgainst) -> list[str]:
    """One reason per wheel on the command line that was built against something else."""
    reasons = []
    for arg in argv:
        if not arg.endswith(".whl") or not os.path.isfile(arg):
            continue
        try:
            built = marker.read(arg)
        except (OSError, ValueError, zipfile.BadZipFile):
            continue  # not ours to judge: pip reports a broken wheel itself
        if built is not None and built.mismatch(here):
            reasons.append(f"{os.path.basename(arg)} was built against {built.mismatch(here)}")
    return reasons


def refuse_foreign_wheels(argv: list[str]) -> None:
    if not is_pip_install(argv):
        return
    here = marker.this_image()
    if here is None:
        return
    reasons = foreign_wheels(argv, here)
    if reasons:
        print(f"pudev: not installing {'; '.join(reasons)}: it would fail at import with \"undefined "
              "symbol\"; build it for this image instead: pudev wheel NAME", file=sys.stderr)
        sys.stderr.flush()
        # Inside site's start-up a SystemExit is a "Fatal Python error" with a traceback: leave at once.
        os._exit(1)
