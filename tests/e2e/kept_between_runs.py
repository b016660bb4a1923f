"""What e2e keeps between runs, as the BuildKit cache is kept, under one folder
($PUDEV_TEST_CACHE, by default $XDG_CACHE_HOME or ~/.cache, then pudev-tests):

- each image's layer listing, by image id (an id names every layer's content, so a listing
  never goes stale; `docker save` of a 7 GB image is a minute), where the engine's storage
  cannot list the layers itself (overlay_layers: seconds, so nothing is kept);
- the release tests' registry storage, so a layer that did not change is never sent again:
  `docker push` asks whether the candidate repository has each blob (HEAD, through the
  storage host's redirect) and skips the ones it has.

Each run still starts from a registry that knows no image: every repository's manifests, tags,
test results, SBOMs and unfinished uploads are removed, and every repository but the candidate
ones loses its layer links too, so promote must mount each layer across repositories again
(test_the_tested_candidate_is_promoted_without_sending_a_layer). Only blobs and the candidate
repositories' links to them survive. Over LIMIT_BYTES the whole storage is dropped."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

import overlay_layers

from pudev.engine import docker
from pudev.engine.layers import Layer, read_layers

LIMIT_BYTES = 24 * 1024**3
CANDIDATE_SUFFIX = "-candidates"


def cache_dir() -> Path:
    explicit = os.environ.get("PUDEV_TEST_CACHE", "").strip()
    return Path(explicit) if explicit else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / \
        "pudev-tests"


def kept_storage_dir() -> Path:
    return cache_dir() / "registry-storage"


def layers_by_id(image: str, image_id: str) -> list[Layer]:
    """read_layers(image) (`image` must still be `image_id`): from the storage where it can list them,
    else from the save, kept under the image id."""
    listed = overlay_layers.read_layers(image)
    if listed is not None:
        _require_still(image, image_id)
        return listed
    path = cache_dir() / "layers" / f"{image_id.removeprefix('sha256:')}.json"
    try:
        return [Layer(**entry) for entry in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        pass
    layers = read_layers(image)
    _require_still(image, image_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps([asdict(layer) for layer in layers]))
    temporary.replace(path)
    return layers


def _require_still(image: str, image_id: str) -> None:
    if docker.image_id(image) != image_id:
        raise AssertionError(f"{image} moved to another image while its layers were read")


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def _blob_data(storage: Path, digest: str) -> Path:
    hexdigest = digest.removeprefix("sha256:")
    return storage / "docker/registry/v2/blobs/sha256" / hexdigest[:2] / hexdigest / "data"


def _named_by_manifests(storage: Path) -> set[str] | None:
    """Every blob digest that a manifest in the storage is or names (config, layers, an index's children);
    None where a manifest cannot be read, so that nothing is swept on a guess."""
    named: set[str] = set()
    for link in (storage / "docker/registry/v2/repositories").rglob("_manifests/revisions/sha256/*/link"):
        digest = "sha256:" + link.parent.name
        try:
            manifest = json.loads(_blob_data(storage, digest).read_bytes())
        except (OSError, ValueError):
            return None
        entries = [manifest.get("config") or {}, *manifest.get("layers", []), *manifest.get("manifests", [])]
        named |= {digest, *(entry["digest"] for entry in entries if isinstance(entry, dict) and "digest" in entry)}
    return named


def _record_file(storage: Path) -> Path:
    return storage.parent / f"{storage.name}-named-blobs.json"


def _read_record(storage: Path) -> dict[str, list[str] | None]:
    """What the runs named: `last`, the blobs of the last run that pushed anything; `current`, this run's
    so far. None where a manifest could not be read: nothing is swept on a guess."""
    try:
        record = json.loads(_record_file(storage).read_text())
        return {"last": record["last"], "current": record["current"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {"last": [], "current": []}


def _add_named(known: list[str] | None, storage: Path) -> list[str] | None:
    """`known` and what the manifests in the storage name (their registry is about to lose them)."""
    named = _named_by_manifests(storage)
    return None if known is None or named is None else sorted(set(known) | named)


def sweep(storage: Path) -> None:
    """Once per run, before its first registry starts: drop the blobs (and the candidate repositories'
    links to them) that the last run which pushed anything did not name."""
    if not storage.exists():
        return
    record = _read_record(storage)
    finished = _add_named(record["current"], storage)  # the last run's last registry left its manifests
    last = finished if finished != [] else record["last"]
    _drop_images(storage)
    _record_file(storage).write_text(json.dumps({"last": last, "current": []}))
    if not last:
        return
    keep = set(last)
    for data in (storage / "docker/registry/v2/blobs/sha256").glob("*/*/data"):
        if "sha256:" + data.parent.name not in keep:
            shutil.rmtree(data.parent)
    for link in (storage / "docker/registry/v2/repositories").rglob("_layers/sha256/*/link"):
        if "sha256:" + link.parent.name not in keep:
            shutil.rmtree(link.parent)


def _drop_images(storage: Path) -> None:
    """Every manifest, tag and unfinished upload; the layer links of all but the candidate repositories."""
    repositories = storage / "docker/registry/v2/repositories"
    if repositories.exists():
        for repository in sorted({path.parent for path in repositories.rglob("_layers")} |
                                 {path.parent for path in repositories.rglob("_manifests")}):
            for part in ("_manifests", "_uploads"):
                shutil.rmtree(repository / part, ignore_errors=True)
            if not repository.name.endswith(CANDIDATE_SUFFIX):
                shutil.rmtree(repository / "_layers", ignore_errors=True)


def reset(storage: Path) -> Path:
    """`storage` as a registry that holds blobs but no image (see the module's text)."""
    if storage.exists() and _size(storage) > LIMIT_BYTES:
        shutil.rmtree(storage)
        _record_file(storage).unlink(missing_ok=True)
    if storage.exists():
        record = _read_record(storage)
        # What the run's previous registry named, before its manifests go.
        current = _add_named(record["current"], storage)
        _record_file(storage).write_text(json.dumps({"last": record["last"], "current": current}))
    _drop_images(storage)
    storage.mkdir(parents=True, exist_ok=True)
    return storage
