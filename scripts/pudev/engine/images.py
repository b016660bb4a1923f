"""Images on the engine: the one "must exist" check, their labels, and the
identity (registry digest, local id) a build records for its inputs."""

from __future__ import annotations

import json
from typing import Any

from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.engine import docker


def require_image(ref: str, *, build_hint: str = "pudev build VARIANT") -> dict[str, Any]:
    """`docker image inspect` of `ref`, or the one-line error that says how to get it."""
    info = docker.inspect_image(ref)
    if info is None:
        raise PudevError(f"no image {ref} here: build it first (`{build_hint}`)")
    return info


def labels_of(info: dict[str, Any]) -> dict[str, str]:
    return dict((info.get("Config") or {}).get("Labels") or {})


def identity(ref: str, info: dict[str, Any] | None = None) -> tuple[str, str]:
    """(manifest digest, local image id). The digest comes from a pinned reference or the
    local copy's registry digest; images built here (stand-ins) have only an id. `info`: the
    image's inspect output where the caller already has it."""
    info = info if info is not None else docker.inspect_image(ref) or {}
    image_id = str(info.get("Id", ""))
    parsed = parse_image_ref(ref)
    if parsed is not None and parsed.digest:
        return parsed.digest, image_id
    for repo_digest in info.get("RepoDigests") or []:
        return str(repo_digest).split("@", 1)[1], image_id
    return "", image_id


_INVENTORIES: dict[str, dict[str, Any]] = {}


def inventory(ref: str, *, files: bool = False) -> dict[str, Any]:
    """What the image says it holds (its own `pudev inventory`: versions, toolkits, pip, conda and dpkg
    lists; with `files`, a census of its files too, a walk of the whole image), read by one throwaway
    container per image and command for whichever readers need it (the manifest, the SBOM, the tags), as
    docker-stacks' manifests share one. A census read serves the readers that need none; the other way
    round, the image is read again."""
    known = _INVENTORIES.get(ref)
    if known is None or (files and "files" not in known):
        known = _INVENTORIES[ref] = dict(json.loads(docker.run(
            ["run", "--rm", "--entrypoint", "pudev", ref, "inventory", *(["--files"] if files else [])],
            timeout=900).stdout))
    return known


def forget_inventories() -> None:
    """A new command reads every image anew (tests run several commands in one process)."""
    _INVENTORIES.clear()
