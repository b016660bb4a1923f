"""The suite's disk policy: what e2e keeps between runs, its cap, and when it is released.

In the engine, each shard (shards.py) starts by releasing what it does not use: the stand-ins and stand-in
builds that none of its builds is or is made from (the last shard's), so that every shard has the room it was
measured to need, whichever ran before it. What it uses stays, so a second run of the same shard is warm. The
build cache, every project's on this engine, is cut to BUILD_CACHE_KEEP at the same moment, only where the
machine is the project's own (CI=true) or PUDEV_PRUNE_BUILD_CACHE=1 allows it.

Under one folder ($PUDEV_TEST_CACHE, by default $XDG_CACHE_HOME or ~/.cache, then pudev-tests), each
image's layer listing, by image id (an id names every layer's content, so a listing never goes stale;
`docker save` of a 7 GB image is a minute). The release tests' registry is not kept: each run has its own
(tests/e2e/conftest.py's run_registry)."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

from pudev.engine import docker
from pudev.engine.layers import Layer, read_layers

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
    shutil.rmtree(cache_dir() / "registry-storage", ignore_errors=True)  # the registry runs kept until 2026-12-08
    if os.environ.get("CI") == "true" or os.environ.get("PUDEV_PRUNE_BUILD_CACHE") == "1":
        docker.run(["builder", "prune", "-f", "--keep-storage", BUILD_CACHE_KEEP], check=False, timeout=1800)
    return removed


def cache_dir() -> Path:
    explicit = os.environ.get("PUDEV_TEST_CACHE", "").strip()
    return Path(explicit) if explicit else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / \
        "pudev-tests"


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

