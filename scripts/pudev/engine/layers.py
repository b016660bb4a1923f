"""What each layer of a built image holds, read from `docker save` (any engine,
any storage driver), and where a layer adds data that a later one deletes or
overwrites: the usual reason a cleanup step fails to shrink an image. Also each
layer's size and the step that made it, as `docker history` lists them."""

from __future__ import annotations

import io
import json
import posixpath
import subprocess
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, Literal

from pudev.common.errors import PudevError
from pudev.engine import docker, images

WHITEOUT = ".wh."
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
OPAQUE = ".wh..wh..opq"


@dataclass
class Layer:
    index: int
    files: dict[str, int] = field(default_factory=dict)  # path -> size of regular files
    deleted: list[str] = field(default_factory=list)  # whited-out paths
    opaque: list[str] = field(default_factory=list)  # directories whose lower contents are hidden
    # The mode of the layer's root entry (`./`), when it has one: docker ignores it, but rootless
    # podman on vfs applies it, so a 0700 root locks every non-root user out.
    root_mode: int | None = None

    @property
    def size(self) -> int:
        return sum(self.files.values())


@dataclass(frozen=True)
class Waste:
    path: str
    size: int
    added_in: int
    undone_in: int
    how: str  # "deleted" or "overwritten"


def _read_layer(index: int, stream: tarfile.TarFile) -> Layer:
    layer = Layer(index)
    for member in stream:
        # Tar names come as `./a`, `a` or `/a`; strip only that prefix, so `.wh.x` and `.bashrc` keep their dot.
        path = posixpath.normpath("/" + member.name.removeprefix("./").lstrip("/"))
        name = posixpath.basename(path)
        if path == "/" and member.isdir():
            layer.root_mode = member.mode
        elif name == OPAQUE:
            layer.opaque.append(posixpath.dirname(path))
        elif name.startswith(WHITEOUT):
            layer.deleted.append(posixpath.join(posixpath.dirname(path), name[len(WHITEOUT):]))
        elif member.isfile():
            layer.files[path] = member.size
    return layer


def _layer_mode(handle: IO[bytes]) -> Literal["r|gz", "r|"] | None:
    """How to open a saved blob as a layer: a plain tar (overlay2's saves) or gzip (the containerd store
    keeps its blobs compressed); None for the JSON beside them (configs, manifests, indexes)."""
    start = handle.peek(4)[:4] if isinstance(handle, io.BufferedReader) else b""
    if start.startswith(GZIP_MAGIC):
        return "r|gz"
    if start.startswith(ZSTD_MAGIC):
        raise PudevError("a layer in `docker save`'s output is zstd-compressed, which pudev cannot read: "
                         "pull or build the image again with gzip layers (the engine's default)")
    return None if start.startswith(b"{") else "r|"


def walk_save(image: str, on_layer: Callable[[str, tarfile.TarFile], None],
              on_other: Callable[[str, IO[bytes]], None] | None = None) -> list[str]:
    """Stream `docker save image` once, without writing it to disk: `on_layer(name, tar)` for each layer blob,
    uncompressed, and `on_other(name, file)` for every other file (the config and manifests). Returns the
    layers' names, bottom first, as the save's manifest lists them."""
    process = subprocess.Popen([docker.docker_cli(), "save", image], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=docker.docker_env())
    assert process.stdout is not None
    manifest: list[dict[str, object]] = []
    unreadable = ""
    try:
        with tarfile.open(fileobj=process.stdout, mode="r|") as archive:
            for member in archive:
                handle = archive.extractfile(member) if member.isfile() else None
                if handle is None:
                    continue
                mode = _layer_mode(handle) if member.name.endswith("layer.tar") or \
                    member.name.startswith("blobs/") else None
                if mode is not None:
                    with tarfile.open(fileobj=handle, mode=mode) as inner:
                        on_layer(member.name, inner)
                    continue
                if member.name == "manifest.json":
                    manifest = json.loads(handle.read())
                elif on_other is not None:
                    on_other(member.name, handle)
    except (tarfile.TarError, EOFError, zlib.error) as error:
        unreadable = str(error)  # a save cut short: its own error, on stderr, says why
    finally:
        process.stdout.close()
        _, stderr = process.communicate()
    if process.returncode != 0 or not manifest or unreadable:
        said = stderr.decode().strip()
        why = docker.last_line(said) if said else f"its output is not an image archive ({unreadable or 'no manifest'})"
        raise PudevError(f"`docker save {image}` failed: {why}")
    names = manifest[0]["Layers"]
    assert isinstance(names, list)
    return [str(name) for name in names]


def read_layers(image: str) -> list[Layer]:
    """Every layer of `image`, bottom first."""
    by_name: dict[str, Layer] = {}

    def on_layer(name: str, inner: tarfile.TarFile) -> None:
        by_name[name] = _read_layer(0, inner)

    layers = []
    for index, name in enumerate(walk_save(image, on_layer)):
        layer = by_name.get(name, Layer(index))
        layer.index = index
        layers.append(layer)
    return layers


def _hidden_by(path: str, later: Layer) -> bool:
    return any(path == gone or path.startswith(gone + "/") for gone in later.deleted) or any(
        path.startswith(directory.rstrip("/") + "/") for directory in later.opaque
    )


def find_waste(layers: list[Layer], first: int, *, threshold: int = 0) -> list[Waste]:
    """Files added in layers[first:] that a later layer deletes or overwrites."""
    waste = []
    for position, layer in enumerate(layers[first:], start=first):
        for path, size in layer.files.items():
            if size <= threshold:
                continue
            for later in layers[position + 1:]:
                if path in later.files:
                    waste.append(Waste(path, size, layer.index, later.index, "overwritten"))
                    break
                if _hidden_by(path, later):
                    waste.append(Waste(path, size, layer.index, later.index, "deleted"))
                    break
    return sorted(waste, key=lambda item: -item.size)


def layer_history(image: str) -> list[dict[str, Any]]:
    lines = docker.run(["history", "--no-trunc", "--human=false", "--format", "{{json .}}", image]).stdout
    layers = []
    for line in reversed(lines.strip().splitlines()):  # docker lists newest first
        entry = json.loads(line)
        layers.append({"size": int(entry.get("Size", 0) or 0), "created_by": entry.get("CreatedBy", "")})
    return layers


def base_layer_count(base_image: str) -> int:
    info = images.require_image(base_image, build_hint="pudev standins")
    return len(info["RootFS"]["Layers"])
