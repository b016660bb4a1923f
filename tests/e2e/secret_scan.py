"""Finding secret bytes in an image, through `docker save`.

One pass, file by file, over every layer uncompressed (the containerd store saves them gzipped) and
over the config and manifests beside them. Only layers made after the secret existed can hold it:
those an image has and an older image (built before the secret was made) lacks. The save reads them
with the rest, and find_secret says how many there were, so that a test can tell the steps made with
the secret really ran."""

from __future__ import annotations

import hashlib
import tarfile
from typing import IO

from pudev.engine import docker
from pudev.engine.layers import walk_save


def _chain_ids(image: str) -> list[str]:
    """Each layer's chain id, bottom first (OCI: the layer's diff id on every diff id below it), from the
    diff ids the engine lists: one id per layer as made on what lies below it."""
    info = docker.inspect_image(image)
    assert info is not None, f"no image {image}"
    chain: list[str] = []
    for diff_id in info.get("RootFS", {}).get("Layers") or []:
        chain.append(f"sha256:{hashlib.sha256(f'{chain[-1]} {diff_id}'.encode()).hexdigest()}" if chain
                     else str(diff_id))
    return chain


def new_layer_count(image: str, older: str) -> int:
    """How many of `image`'s layers `older` lacks, by chain id (a layer rebuilt on a changed one is new)."""
    theirs = set(_chain_ids(older))
    return sum(1 for layer in _chain_ids(image) if layer not in theirs)


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


def find_secret(image: str, older: str, needle: str) -> tuple[list[str], int]:
    """Files of `image`'s save that hold `needle` (files_in_save: every layer, the config and the manifests), and
    how many of its layers `older` lacks, the ones that could hold it (all of them read)."""
    return files_in_save(image, needle.encode()), new_layer_count(image, older)
