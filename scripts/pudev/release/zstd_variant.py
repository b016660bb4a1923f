"""The zstd copy of a released image, published beside the gzip one as TAG-zstd.

Docker Engine before 23.0 cannot pull zstd layers (moby#41759 landed in 23.0; 20.10 reads the layer
as a bad tar), so the gzip tags stay what every client pulls, and TAG-zstd serves podman, CRI-O,
containerd 1.5+, Docker 23+ and enroot 4.0+. Every layer is recompressed, the base's too, since enroot
decides the compression of all layers from the first one's media type. The image config is the same
blob, so both tags name the image that passed (the same config digest and diff_ids); only the
compressed bytes differ. A layer already converted (the same diff_id, which is the uncompressed
content) is reused when the repository still holds its blob: found through the repository's other
-zstd tags, or through this machine's record of what it converted before (a registry that keeps
blobs but not tags, as the e2e registry between runs), so a release converts only what it changed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.paths import cache_dir
from pudev.registry.client import RegistryClient
from pudev.registry.names import api_host

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_ZSTD_LAYER = "application/vnd.oci.image.layer.v1.tar+zstd"
SUFFIX = "-zstd"
# Levels, measured on the stand-in's 389 MB numerical-stack layer on 2 CPUs: gzip -6 129 MB in 14 s; zstd
# -3 119 MB in 2 s, -9 104 MB in 5 s, -12 103 MB in 10 s, -15 102 MB in 40 s, -17 94 MB in 75 s. The
# project's own layers get -12; the base's few GB, converted once and then reused, -3. Decompression is
# as fast at any level, so the level only costs the publisher.
DEFAULT_LEVEL = 12
DEFAULT_BASE_LEVEL = 3
# What the history entry of docker/Dockerfile's first layer of its own names (a unit test keeps it first).
FIRST_OWN_LAYER = "/tmp/install-os-packages.sh"


RECORD_FILE = "zstd-layers.json"  # in pudev's cache: "diff_id zstd-LEVEL" -> the zstd layer's descriptor


def _recorded() -> dict[str, dict[str, Any]]:
    try:
        found = json.loads((cache_dir() / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _remember(converted: dict[str, dict[str, Any]]) -> None:
    """Add this run's conversions to the record (descriptors only: no host, path or credential)."""
    if not converted:
        return
    path = cache_dir() / RECORD_FILE
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps({**_recorded(), **converted}, indent=1, sort_keys=True) + "\n")
    partial.replace(path)


def base_layer_count(config: dict[str, Any]) -> int | None:
    """How many of the image's layers are its base's: those before its first own layer in its history
    (None for an image pudev did not build)."""
    layers = 0
    for entry in config.get("history", []):
        if FIRST_OWN_LAYER in entry.get("created_by", ""):
            return layers
        if not entry.get("empty_layer"):
            layers += 1
    return None


@dataclass(frozen=True)
class Converted:
    tags: tuple[str, ...]
    digest: str
    layers_converted: int
    layers_reused: int
    own_bytes: tuple[int, int] = (0, 0)  # the project's own layers, compressed: (gzip, zstd)


def _require_tools() -> None:
    missing = [tool for tool in ("gzip", "zstd") if shutil.which(tool) is None]
    if missing:
        raise PudevError(f"the zstd copy needs {' and '.join(missing)} on PATH; install them (Debian: apt-get "
                         "install zstd) or publish without --zstd")


def _recompress(client: RegistryClient, repository: str, layer: dict[str, Any], diff_id: str, level: int) -> bytes:
    """One gzip layer, fetched and checked against its digest, as zstd bytes that decompress to exactly
    the layer's content (its diff_id): what a puller unpacks is what passed."""
    with tempfile.TemporaryDirectory() as folder:
        gzipped, compressed = Path(folder) / "layer.gz", Path(folder) / "layer.zst"
        with gzipped.open("wb") as sink:
            client.stream_blob(repository, layer["digest"], sink)
        with gzipped.open("rb") as source, compressed.open("wb") as sink:
            done = subprocess.run(["sh", "-c", f"gzip -dc | zstd -q -T0 -{level}"], stdin=source, stdout=sink,
                                  stderr=subprocess.PIPE, check=False)
        if done.returncode != 0:
            raise PudevError(f"recompressing layer {layer['digest'][:19]} failed: "
                             f"{done.stderr.decode(errors='replace').strip()[-300:]}")
        if _content_digest(compressed) != diff_id:
            raise PudevError(f"layer {layer['digest'][:19]} recompressed does not unpack to its diff_id "
                             f"{diff_id[:19]}; nothing was published")
        return compressed.read_bytes()


def _content_digest(path: Path) -> str:
    hasher = hashlib.sha256()
    with subprocess.Popen(["zstd", "-q", "-dc", str(path)], stdout=subprocess.PIPE) as process:
        assert process.stdout is not None
        for chunk in iter(lambda: process.stdout.read(1 << 20), b""):  # type: ignore[union-attr]
            hasher.update(chunk)
    return "sha256:" + hasher.hexdigest()


def _earlier_layers(client: RegistryClient, repository: str) -> dict[str, dict[str, Any]]:
    """diff_id -> zstd layer descriptor, from every zstd copy this repository holds (the base's layers
    are shared by every release, and a candidate's tag is new each time)."""
    found: dict[str, dict[str, Any]] = {}
    for tag in (tag for tag in client.list_tags(repository) if tag.endswith(SUFFIX)):
        body, _ = client.manifest(repository, tag)
        top = json.loads(body)
        manifests = [top] if "layers" in top else [
            json.loads(client.manifest(repository, child["digest"])[0]) for child in top.get("manifests", [])]
        for manifest in manifests:
            config = json.loads(client.get_blob(repository, manifest["config"]["digest"]))
            for diff_id, layer in zip(config["rootfs"]["diff_ids"], manifest["layers"], strict=True):
                if layer.get("mediaType") == OCI_ZSTD_LAYER:
                    found.setdefault(diff_id, layer)
    return found


def own_layer_bytes(client: RegistryClient, repository: str, manifest: dict[str, Any]) -> int:
    """The compressed size of the image's own layers (above its base), as the manifest records them."""
    config = json.loads(client.get_blob(repository, manifest["config"]["digest"]))
    base_layers = base_layer_count(config)
    if base_layers is None:
        raise PudevError(f"{client.host}/{repository}: the image has no layer {FIRST_OWN_LAYER.strip()!r} in its "
                         "history; it was not built from docker/Dockerfile")
    return sum(int(layer["size"]) for layer in manifest["layers"][base_layers:])


def convert_manifest(client: RegistryClient, repository: str, manifest: dict[str, Any], *, level: int,
                     base_level: int, earlier: dict[str, dict[str, Any]]) -> tuple[bytes, int, int]:
    """An OCI manifest of the same config with every layer zstd; (body, converted, reused)."""
    config = json.loads(client.get_blob(repository, manifest["config"]["digest"]))
    diff_ids = config["rootfs"]["diff_ids"]
    base_layers = base_layer_count(config) or 0
    if len(diff_ids) != len(manifest["layers"]):
        raise PudevError(f"{repository}: the manifest has {len(manifest['layers'])} layers, its config "
                         f"{len(diff_ids)}; not converting an inconsistent image")
    layers, converted, reused = [], 0, 0
    recorded, made = _recorded(), {}
    for index, (diff_id, layer) in enumerate(zip(diff_ids, manifest["layers"], strict=True)):
        layer_level = base_level if index < base_layers else level
        key = f"{diff_id} zstd-{layer_level}"
        known = earlier.get(diff_id) or recorded.get(key)
        if known and client.blob_exists(repository, known["digest"]):
            layers.append(known)
            reused += 1
            continue
        data = _recompress(client, repository, layer, diff_id, layer_level)
        made[key] = {"mediaType": OCI_ZSTD_LAYER, "digest": client.upload_blob(repository, data), "size": len(data)}
        layers.append(made[key])
        converted += 1
    _remember(made)
    body = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": manifest["config"]["digest"],
                       "size": manifest["config"]["size"]},
            "layers": layers}
    if manifest.get("annotations"):
        body["annotations"] = manifest["annotations"]
    return json.dumps(body, indent=2).encode(), converted, reused


def publish_zstd(client: RegistryClient, repository: str, tag: str, *, level: int = DEFAULT_LEVEL,
                 base_level: int = DEFAULT_BASE_LEVEL) -> Converted:
    """TAG-zstd for the image (or every platform of the index) TAG names."""
    _require_tools()
    if client.digest(repository, tag) is None:
        raise PudevError(f"{client.host}/{repository}:{tag} does not exist; promote it first")
    target = tag + SUFFIX
    body, _ = client.manifest(repository, tag)
    source = json.loads(body)
    converted = reused = 0
    if "manifests" in source:  # one tag for every platform: each child converted, the index rewritten
        earlier = _earlier_layers(client, repository)
        children = []
        for child in source["manifests"]:
            child_body, _ = client.manifest(repository, child["digest"])
            new, done, kept = convert_manifest(client, repository, json.loads(child_body), level=level,
                                               base_level=base_level, earlier=earlier)
            converted, reused = converted + done, reused + kept
            answer = client.put_manifest(repository, _digest_of(new), new, OCI_MANIFEST)
            answer.close()
            children.append({**child, "mediaType": OCI_MANIFEST, "digest": _digest_of(new), "size": len(new)})
        out = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": children}, indent=2).encode()
        media_type = OCI_INDEX
    else:
        out, converted, reused = convert_manifest(client, repository, source, level=level, base_level=base_level,
                                                  earlier=_earlier_layers(client, repository))
        media_type = OCI_MANIFEST
    client.put_manifest(repository, target, out, media_type).close()
    sizes = (0, 0)
    if "layers" in source:
        sizes = (own_layer_bytes(client, repository, source), own_layer_bytes(client, repository, json.loads(out)))
    return Converted((target,), _digest_of(out), converted, reused, sizes)


def _released(text: str) -> tuple[str, str, str]:
    """(registry host, repository, tag) of REGISTRY/REPO:TAG."""
    ref = parse_image_ref(text)
    if ref is None or not ref.domain or not ref.tag or ref.digest:
        raise PudevError(f"pudev zstd {text}: not a released tag; write REGISTRY/REPOSITORY:TAG (what `pudev promote` "
                         "printed)")
    return ref.domain, ref.path, ref.tag


def publish_zstd_tags(references: Sequence[str], *, level: int = DEFAULT_LEVEL,
                      base_level: int = DEFAULT_BASE_LEVEL) -> Converted:
    """The first tag converted; every other tag, which must name the same image, pointed at the result."""
    if not references:
        raise PudevError("pudev zstd: give the released tags, REGISTRY/REPOSITORY:TAG")
    parsed = [_released(text) for text in references]
    host, repository, first = parsed[0]
    for text, (other_host, other_repository, _) in zip(references[1:], parsed[1:], strict=True):
        if (other_host, other_repository) != (host, repository):
            raise PudevError(f"pudev zstd {text}: every tag must be in the repository of {references[0]}")
    others = [tag for _, _, tag in parsed[1:]]
    client = RegistryClient(api_host(host))
    digest = client.digest(repository, first)
    for tag in others:
        if client.digest(repository, tag) != digest:
            raise PudevError(f"pudev zstd: {host}/{repository}:{tag} is not the image {first} names; give the tags of "
                             "one released image")
    done = publish_zstd(client, repository, first, level=level, base_level=base_level)
    for tag in others:
        client.tag(repository, done.digest, tag + SUFFIX)
    return Converted((*done.tags, *(tag + SUFFIX for tag in others)), done.digest, done.layers_converted,
                     done.layers_reused, done.own_bytes)




def _digest_of(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()
