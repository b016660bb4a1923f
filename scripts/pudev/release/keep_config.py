"""`pudev keep-config RELEASE LAYOUT`: give the images of an OCI layout copied from RELEASE (the zstd
twin, `skopeo copy --dest-compress-format zstd docker://RELEASE oci:LAYOUT:TAG`) the configs of the
images that passed, byte for byte, so the twin keeps their image ids.

skopeo must write zstd layers under an OCI manifest, and converting a Docker schema-2 manifest
rewrites the config in its OCI form (Docker's HEALTHCHECK and build metadata dropped): another
image id. The tested config is valid under the OCI config media type as it is (BuildKit's own OCI
output labels the same JSON so), and its diff_ids name uncompressed layers, which zstd keeps. The
layout is edited in place; `skopeo copy oci:LAYOUT:TAG docker://...` then publishes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pudev.common.errors import PudevError
from pudev.registry.client import RegistryClient
from pudev.registry.oci import OCI_CONFIG, content_digest
from pudev.release.targets import parse_digest_ref

FLAG = "pudev keep-config"
SKOPEO_HINT = "make it with `skopeo copy --all --dest-compress-format zstd docker://RELEASE oci:LAYOUT:TAG`"
DiffIds = tuple[str, ...]


def keep_config(release: str, layout: Path) -> int:
    """The command: the layout checked first, then RELEASE read; returns how many images changed."""
    parse_digest_ref(release, flag=FLAG)
    for descriptor in _json(layout, _index_file(layout), "index.json").get("manifests") or []:
        _check(layout, descriptor)
    return apply_configs(layout, tested_configs(release))


def tested_configs(release: str) -> dict[DiffIds, bytes]:
    """The config of every image RELEASE holds (itself, or each child of its index), by its layers."""
    ref = parse_digest_ref(release, flag=FLAG)
    client = RegistryClient(ref.target.api)
    repository = ref.target.repository
    try:
        if client.digest(repository, ref.digest) is None:
            raise PudevError(f"{ref.target.host} has no image {ref.digest[:19]} in {repository} (HTTP 404); check "
                             f"the digest and the repository (`skopeo inspect docker://{release}`): RELEASE is what "
                             "the layout was copied from, by the digest `pudev promote` printed")
        document = json.loads(client.manifest(repository, ref.digest)[0])
        manifests = [json.loads(client.manifest(repository, child["digest"])[0])
                     for child in document.get("manifests", [])] or [document]
        configs: dict[DiffIds, bytes] = {}
        for manifest in manifests:
            config = client.get_blob(repository, manifest["config"]["digest"])
            configs[tuple(json.loads(config)["rootfs"]["diff_ids"])] = config
    except PudevError as error:  # the registry's refusal, named as the argument that led there
        raise PudevError(f"{FLAG} RELEASE: {error}") from None
    except (ValueError, KeyError, TypeError, AttributeError):
        raise PudevError(f"{FLAG} RELEASE {release}: the registry's manifest or config there is not an image's; "
                         "check that RELEASE names an image or an index of images (`skopeo inspect --raw "
                         f"docker://{release}`)") from None
    return configs


def apply_configs(layout: Path, configs: dict[DiffIds, bytes]) -> int:
    """Point every image manifest in the layout at the config with its diff_ids; returns how many."""
    top = _index_file(layout)
    index = json.loads(top.read_text())
    changed = sum(_rewrite(layout, descriptor, configs) for descriptor in index["manifests"])
    top.write_text(json.dumps(index))
    return changed


def _index_file(layout: Path) -> Path:
    top = layout / "index.json"
    if not top.is_file():
        raise PudevError(f"{FLAG}: {layout} has no index.json, so it is not an OCI layout; {SKOPEO_HINT}")
    return top


def _json(layout: Path, path: Path, what: str) -> dict[str, Any]:
    """A layout's JSON document, or a one-line error: a layout skopeo did not finish writing is not used."""
    try:
        document = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise PudevError(f"{FLAG}: {layout} lacks {what}, so the layout is incomplete; {SKOPEO_HINT} again") from None
    except (OSError, ValueError):
        raise PudevError(f"{FLAG}: {what} in {layout} is not JSON, so the layout is damaged; {SKOPEO_HINT} "
                         "again") from None
    if not isinstance(document, dict):
        raise PudevError(f"{FLAG}: {what} in {layout} is not a JSON object; {SKOPEO_HINT} again")
    return document


def _check(layout: Path, descriptor: Any) -> None:
    """Every manifest and config the layout names is there and is JSON, before anything is written."""
    digest = str(descriptor.get("digest", "")) if isinstance(descriptor, dict) else ""
    document = _json(layout, _blob(layout, digest), f"the blob {digest[:19] or '(no digest)'}")
    for child in document.get("manifests") or []:
        _check(layout, child)
    if "config" in document:
        config = str(document["config"].get("digest", ""))
        _json(layout, _blob(layout, config), f"the config blob {config[:19]}")


def _blob(layout: Path, digest: str) -> Path:
    return layout / "blobs" / "sha256" / digest.removeprefix("sha256:")


def _store(layout: Path, data: bytes) -> dict[str, Any]:
    digest = content_digest(data)
    _blob(layout, digest).write_bytes(data)
    return {"digest": digest, "size": len(data)}


def _rewrite(layout: Path, descriptor: dict[str, Any], configs: dict[DiffIds, bytes]) -> int:
    """Rewrite the manifest (or each manifest of the index) `descriptor` names, and the descriptor with it."""
    document = json.loads(_blob(layout, descriptor["digest"]).read_bytes())
    if "manifests" in document:
        changed = sum(_rewrite(layout, child, configs) for child in document["manifests"])
    else:
        copied = json.loads(_blob(layout, document["config"]["digest"]).read_bytes())
        diff_ids = tuple(copied["rootfs"]["diff_ids"])
        if diff_ids not in configs:
            raise PudevError(f"{FLAG}: the image {descriptor['digest'][:19]} in {layout} has the layers of no image "
                             f"in RELEASE; {SKOPEO_HINT}, from that RELEASE")
        document["config"] = {"mediaType": OCI_CONFIG, **_store(layout, configs[diff_ids])}
        changed = 1
    descriptor.update(_store(layout, json.dumps(document, separators=(",", ":")).encode()))
    return changed
