"""Checks of the arguments that name files pudev writes, made before the engine or a registry
is asked anything: a path that cannot be written fails at once, naming its flag, rather than
after a push or a test run that took minutes."""

from __future__ import annotations

import os
from pathlib import Path

from pudev.common.errors import PudevError


def output_file(text: str, flag: str, *, makes_folders: bool = False) -> Path:
    """`text` as a file pudev may write; `makes_folders`: the writer creates missing folders on the way."""
    path = Path(text)
    if path.is_dir():
        raise PudevError(f"{flag} {text}: a folder, not a file; name a file in it")
    folder = path.parent
    if makes_folders:
        while not folder.exists() and folder != folder.parent:  # the nearest folder that exists is the one written
            folder = folder.parent
    if not folder.is_dir():
        raise PudevError(f"{flag} {text}: no folder {folder} to write it in; create it or name another path")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise PudevError(f"{flag} {text}: not writable by this user; name a path you may write")
    return path
