"""Finding secret bytes in an image's layers, cheaply.

Only layers made after the secret existed can hold it, so the scan reads the layers that an image
has and an older image (built before the secret was made) lacks. On overlay2 each layer is a folder
of the engine's storage, and `grep -rlF` reads it at disk speed. Elsewhere (another storage driver,
or folders this user may not read, the containerd store) it falls back to `docker save`: one pass,
file by file, over every layer uncompressed (the containerd store saves them gzipped) and over the
config and manifests beside them."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path
from typing import IO

from overlay_layers import layer_folders

from pudev.engine.layers import walk_save


def new_layer_folders(image: str, older: str) -> list[Path] | None:
    mine, theirs = layer_folders(image), layer_folders(older)
    if mine is None or theirs is None:
        return None
    return [folder for folder in mine if folder not in set(theirs)]


def grep_folders(folders: list[Path], needle: str) -> list[str]:
    if not folders:
        return []
    # -r skips devices (overlay2's whiteouts) and never follows a link out of the layer.
    found = subprocess.run(["grep", "-rlF", "--", needle, *map(str, folders)], capture_output=True, text=True,
                           check=False)
    assert found.returncode in (0, 1), found.stderr  # 1: nothing found; 2: an error
    return found.stdout.splitlines()


def _holds(handle: IO[bytes], needle: bytes) -> bool:
    tail = b""
    while chunk := handle.read(1 << 22):
        window = tail + chunk
        if needle in window:
            return True
        tail = window[-len(needle):]  # a needle split across two reads
    return False


def files_in_save(image: str, needle: bytes) -> list[str]:
    """Every file of the save that holds `needle`: a layer's (uncompressed, on any store) or the config's and
    manifests' (labels, environment, history)."""
    found = []

    def on_layer(name: str, layer: tarfile.TarFile) -> None:
        for entry in layer:
            data = layer.extractfile(entry) if entry.isfile() else None
            if data is not None and _holds(data, needle):
                found.append(f"{name}:{entry.name}")

    def on_other(name: str, handle: IO[bytes]) -> None:
        if _holds(handle, needle):
            found.append(name)

    walk_save(image, on_layer, on_other)
    return found


def find_secret(image: str, older: str, needle: str) -> tuple[list[str], int | None]:
    """Files of `image`'s layers newer than `older` that hold `needle`, and how many layer folders were read
    (None: the `docker save` fallback read every layer)."""
    folders = new_layer_folders(image, older)
    if folders is not None:
        return grep_folders(folders, needle), len(folders)
    return files_in_save(image, needle.encode()), None
