"""What each layer of a built image holds, read from `docker save` (any engine,
any storage driver), and where a layer adds data that a later one deletes or
overwrites: the usual reason a cleanup step fails to shrink an image. Also each
layer's size and the step that made it, as `docker history` lists them."""

from __future__ import annotations

import gzip
import io
import json
import posixpath
import subprocess
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import IO, Any

from pudev.common.errors import PudevError
from pudev.engine import docker, images

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
TAR_MAGIC, TAR_MAGIC_AT = b"ustar", 257  # POSIX, GNU and PAX headers all carry it


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


def _open_layer(handle: IO[bytes]) -> tarfile.TarFile | None:
    """A saved blob opened as a layer, uncompressed: a plain tar (overlay2's saves) or gzip (what the
    containerd store keeps for a built or pulled layer); None for anything else (configs, manifests, indexes)."""
    assert isinstance(handle, io.BufferedReader), "tarfile's member files can be peeked"
    start = handle.peek(TAR_MAGIC_AT + len(TAR_MAGIC))
    if start.startswith(GZIP_MAGIC):
        # GzipFile, not tarfile's "r|gz": a layer may be several gzip members in a row (eStargz).
        return tarfile.open(fileobj=gzip.GzipFile(fileobj=handle), mode="r|")
    if start.startswith(ZSTD_MAGIC):
        raise PudevError("a layer in `docker save`'s output is zstd-compressed, which pudev cannot read: "
                         "pull or build the image again with gzip layers (the engine's default)")
    if start[TAR_MAGIC_AT:TAR_MAGIC_AT + len(TAR_MAGIC)] == TAR_MAGIC:
        return tarfile.open(fileobj=handle, mode="r|")
    return None  # JSON, or an empty layer: nothing to list


def walk_save(image: str, on_layer: Callable[[str, tarfile.TarFile], None],
              on_other: Callable[[str, IO[bytes]], None] | None = None) -> list[str]:
    """Stream `docker save image` once, without writing it to disk: `on_layer(name, tar)` for each layer blob,
    uncompressed, and `on_other(name, file)` for every other file (the config, manifest.json, the OCI index
    and manifests). Returns the layers' names, bottom first, as manifest.json lists them."""
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
                is_blob = member.name.endswith("layer.tar") or member.name.startswith("blobs/")
                layer = _open_layer(handle) if is_blob else None
                if layer is not None:
                    with layer:
                        on_layer(member.name, layer)
                    continue
                if member.name == "manifest.json":
                    data = handle.read()
                    manifest = json.loads(data)
                    handle = io.BufferedReader(io.BytesIO(data))
                if on_other is not None:
                    on_other(member.name, handle)
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, ValueError) as error:
        unreadable = str(error) or type(error).__name__
    finally:
        process.stdout.close()  # a walk stopped early ends the save with a broken pipe
        _, stderr = process.communicate()
    if process.returncode != 0 or not manifest or unreadable:
        parts = [f"its output is not an image archive ({unreadable or 'no manifest.json'})"] \
            if unreadable or not manifest else []
        if stderr.strip():
            parts.append(docker.last_line(stderr.decode()))
        raise PudevError(f"`docker save {image}` failed: {'; '.join(parts) or 'it exited ' + str(process.returncode)}")
    names = manifest[0]["Layers"]
    assert isinstance(names, list)
    return [str(name) for name in names]


def read_layers(image: str) -> list[Layer]:
    """Every layer of `image`, bottom first (a blob the manifest lists twice, such as an empty layer, is
    listed at each place)."""
    by_name: dict[str, Layer] = {}

    def on_layer(name: str, inner: tarfile.TarFile) -> None:
        by_name[name] = _read_layer(0, inner)

    return [replace(by_name.get(name, Layer(0)), index=index)
            for index, name in enumerate(walk_save(image, on_layer))]


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
