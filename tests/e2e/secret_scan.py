"""Finding secret bytes in an image's layers, cheaply.

Only layers made after the secret existed can hold it, so the scan reads the layers that an image
has and an older image (built before the secret was made) lacks. On overlay2 each layer is a folder
of the engine's storage, and `grep -rlF` reads it at disk speed. Elsewhere (another storage driver,
or folders this user may not read) it falls back to `docker save`: one pass over its bytes, since
layers in a save are plain tars that keep each file's bytes in one run, then a file-by-file walk
only to name what was found."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

from overlay_layers import layer_folders

from pudev.engine import docker


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


def save_contains(image: str, needle: bytes) -> bool:
    process = subprocess.Popen([docker.docker_cli(), "save", image], stdout=subprocess.PIPE, env=docker.docker_env())
    assert process.stdout is not None
    tail, found = b"", False
    while chunk := process.stdout.read(1 << 22):
        window = tail + chunk
        found = found or needle in window
        tail = window[-len(needle):]  # a needle split across two reads
    assert process.wait() == 0
    return found


def files_in_save(image: str, needle: bytes) -> list[str]:
    process = subprocess.Popen([docker.docker_cli(), "save", image], stdout=subprocess.PIPE, env=docker.docker_env())
    assert process.stdout is not None
    found = []
    with tarfile.open(fileobj=process.stdout, mode="r|") as archive:
        for member in archive:
            handle = archive.extractfile(member) if member.isfile() else None
            if handle is None or not (member.name.endswith("layer.tar") or member.name.startswith("blobs/")):
                continue
            with tarfile.open(fileobj=handle, mode="r|") as layer:
                for entry in layer:
                    data = layer.extractfile(entry) if entry.isfile() else None
                    if data is not None and needle in data.read():
                        found.append(f"{member.name}:{entry.name}")
    process.wait()
    return found


def find_secret(image: str, older: str, needle: str) -> tuple[list[str], int | None]:
    """Files of `image`'s layers newer than `older` that hold `needle`, and how many layer folders were read
    (None: the `docker save` fallback read every layer)."""
    folders = new_layer_folders(image, older)
    if folders is not None:
        return grep_folders(folders, needle), len(folders)
    if not save_contains(image, needle.encode()):
        return [], None
    return files_in_save(image, needle.encode()) or ["(in docker save's bytes)"], None
