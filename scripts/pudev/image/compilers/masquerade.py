"""Where the compile workshop's compiler links are, and the real compiler each one stands for.

/opt/pudev/compilers/bin holds cc/gcc/c++/g++ links to pudev-compile, first on PATH, so every build
reaches ccache through them. Whoever needs the compiler itself (the launcher, to run it; the record
step and `pudev verify`, to ask its version) looks past that directory. Standard library only: the
launcher runs under `python -S`, and the record step runs before the in-image tools are copied.
"""

from __future__ import annotations

import os
import shutil

HOME = "/opt/pudev/compilers"
MASQUERADE = f"{HOME}/bin"


def without_masquerade(path: str) -> str:
    """PATH without the masquerade directory (however it is spelled)."""
    own = os.path.realpath(MASQUERADE)
    return ":".join(entry for entry in path.split(":") if entry and os.path.realpath(entry) != own)


def next_on_path(name: str, path: str) -> str | None:
    """The `name` a masquerade link stands for: the first one on `path` outside the masquerade."""
    return shutil.which(name, path=without_masquerade(path))
