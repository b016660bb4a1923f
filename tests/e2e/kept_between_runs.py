"""The suite's disk policy: what e2e keeps between runs, its cap, and when it is released.

In the engine, each shard (shards.py) starts by releasing what it does not use: the stand-ins and stand-in
builds that none of its builds is or is made from (the last shard's), so that every shard has the room it was
measured to need, whichever ran before it. What it uses stays, so a second run of the same shard is warm. The
build cache, every project's on this engine, is cut to BUILD_CACHE_KEEP at the same moment, only where the
machine is the project's own (CI=true) or PUDEV_PRUNE_BUILD_CACHE=1 allows it.

Under one folder ($PUDEV_TEST_CACHE, by default $XDG_CACHE_HOME or ~/.cache, then pudev-tests):

- each image's layer listing, by image id (an id names every layer's content, so a listing
  never goes stale; `docker save` of a 7 GB image is a minute);
- the kept registry's storage, so a layer that did not change is never sent again: `docker push`
  asks whether the candidate repository has each blob and skips the ones it has.

Each run still starts from a registry that knows no image, with Distribution's own tools only:
before it starts, `garbage-collect` drops every blob that no manifest of the last run named;
once it runs, every manifest a tag reaches is deleted through the API (its test results and
SBOMs go with it; an untagged one a run left behind stays, named by no tag, until the storage
outgrows LIMIT_BYTES), and in all but the candidate repositories the layer links too, so promote must mount
each layer across repositories again
(test_release.py::test_the_tested_candidate_is_promoted_without_sending_a_layer). Over
LIMIT_BYTES the whole storage is dropped."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import requests
from realistic_registry import RealisticRegistry

from pudev.engine import docker
from pudev.engine.layers import Layer, read_layers
from pudev.registry.oci import MANIFEST_TYPES

LIMIT_BYTES = 24 * 1024**3
CANDIDATE_SUFFIX = "-candidates"
# What the build cache keeps after a shard's release, least recently used records going first. At 20 GB the
# 2024 shard after the newest one peaked 50.1 GB above a fresh start, past `.ci/run`'s 45 GB
# (docs/maintaining/proof-costs.md): what it keeps is the last shard's records, of no use to this one.
BUILD_CACHE_KEEP = "10GB"


def release_for(builds: list[str]) -> list[str]:
    """Before a shard: remove every stand-in and stand-in build none of `builds` is or is made from, and cut the
    build cache where allowed (the module's docstring). Returns what was removed."""
    from e2e_support import profile_variant, split_build, standin_builds  # e2e_support imports this module

    from pudev.building.plan import local_tag
    from pudev.devtools.standins import images_of_profile, load_standins

    standins = load_standins()
    kept = {standin.image for standin in standins if not standin.dockerfile}  # the OS images: small, and every
    for build in builds:                                                       # other stand-in is built on them
        profile, platform = split_build(build)
        kept |= {local_tag(profile_variant(build)), *images_of_profile(profile, platform)}
    ours = {standin.image.rsplit(":", 1)[0] for standin in standins} | {
        profile_variant(build).image for build in standin_builds()}
    listed = docker.run(["images", "--format", "{{.Repository}}:{{.Tag}}"], check=False).stdout.split()
    removed = [name for name in listed if name.rsplit(":", 1)[0] in ours and name not in kept]
    if removed:
        docker.run(["rmi", *removed], check=False, timeout=600)
    if os.environ.get("CI") == "true" or os.environ.get("PUDEV_PRUNE_BUILD_CACHE") == "1":
        docker.run(["builder", "prune", "-f", "--keep-storage", BUILD_CACHE_KEEP], check=False, timeout=1800)
    return removed


def cache_dir() -> Path:
    explicit = os.environ.get("PUDEV_TEST_CACHE", "").strip()
    return Path(explicit) if explicit else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / \
        "pudev-tests"


def kept_storage_dir() -> Path:
    return cache_dir() / "registry-storage"


def layers_by_id(image: str, image_id: str) -> list[Layer]:
    """read_layers(image) (`image` must still be `image_id`), from its `docker save` once and then from the
    listing kept under the image id."""
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


def collect_garbage(registry: RealisticRegistry) -> None:
    """Before the kept registry starts: its storage less every blob no manifest names (all of it over LIMIT_BYTES)."""
    storage = registry.distribution.storage
    if storage.exists() and _size(storage) > LIMIT_BYTES:
        shutil.rmtree(storage)
    # Distribution's garbage-collect fails on a storage that never held a repository (a first run's).
    if (storage / "docker/registry/v2/repositories").is_dir():
        registry.distribution.garbage_collect()


class _Api:
    """The registry's API as its "admin" user (it alone may list the repositories)."""

    def __init__(self, registry: RealisticRegistry) -> None:
        self.registry, self.session = registry, requests.Session()
        self.session.trust_env = False  # never an HTTP proxy for 127.0.0.1
        self.session.verify = str(registry.ca_file)

    def call(self, method: str, path: str, scope: str, *, ok: tuple[int, ...] = (200, 202)) -> requests.Response:
        token = self.registry.token("admin", scope)
        answer = self.session.request(method, f"https://{self.registry.address}{path}", timeout=60, headers={
            "Authorization": f"Bearer {token}", "Accept": ", ".join(MANIFEST_TYPES)})
        if answer.status_code not in ok:
            raise RuntimeError(f"{method} {path}: {answer.status_code} {answer.text[:300]}")
        return answer

    def repositories(self) -> list[str]:
        return list(self.call("GET", "/v2/_catalog?n=1000", "registry:catalog:*").json().get("repositories") or [])

    def tags(self, repository: str) -> list[str]:
        answer = self.call("GET", f"/v2/{repository}/tags/list", f"repository:{repository}:pull", ok=(200, 404))
        return list(answer.json().get("tags") or []) if answer.status_code == 200 else []

    def manifests(self, repository: str, reference: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(digest, manifest) of `reference` and, for an index, of each of its children."""
        answer = self.call("GET", f"/v2/{repository}/manifests/{reference}", f"repository:{repository}:pull",
                           ok=(200, 404))
        if answer.status_code == 404:
            return  # a child of an index deleted before it
        body = answer.json()
        yield answer.headers["Docker-Content-Digest"], body
        for child in body.get("manifests") or []:
            yield from self.manifests(repository, child["digest"])


def forget_images(registry: RealisticRegistry) -> None:
    """On the started kept registry: every manifest deleted through the API, and the layer links of all but
    the candidate repositories."""
    api = _Api(registry)
    for repository in api.repositories():
        found = {digest: body for tag in api.tags(repository) for digest, body in api.manifests(repository, tag)}
        layers = {entry["digest"] for body in found.values()
                  for entry in [body.get("config") or {}, *(body.get("layers") or [])] if "digest" in entry}
        scope = f"repository:{repository}:delete"
        for digest in found:
            api.call("DELETE", f"/v2/{repository}/manifests/{digest}", scope, ok=(202, 404))
        if not repository.endswith(CANDIDATE_SUFFIX):
            for digest in sorted(layers):
                api.call("DELETE", f"/v2/{repository}/blobs/{digest}", scope, ok=(202, 404))
