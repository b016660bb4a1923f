"""`pudev push VARIANT --registry R`: push a built image once, by digest, to the
candidate repository (R/<image>-candidates). Nothing users pull from: it is
tested there by digest and promoted only after it passed. The variant and the
repository name come from the image's own labels, not from the checkout."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from pudev.common.environment import setting
from pudev.common.errors import PudevError
from pudev.engine import docker, images
from pudev.registry.client import RegistryClient
from pudev.release.image_labels import release_labels
from pudev.release.targets import DigestRef, Target, check_registry, parse_target
from pudev.testing.suite_run import LocalBuild

_PUSHED_DIGEST = re.compile(r"digest: (sha256:[0-9a-f]{64})")


def candidate_tag(variant: str, image_id: str) -> str:
    """One tag per built image: the variant and the image id, so a rebuild never overwrites it."""
    return f"{variant}-{image_id.removeprefix('sha256:')[:12]}"


def _push_with_retries(remote: str, attempts: int) -> str:
    delay = 1.0
    for attempt in range(1, attempts + 1):
        result = docker.run(["push", remote], check=False, timeout=7200)
        if result.returncode == 0:
            match = _PUSHED_DIGEST.search(result.stdout)
            if match is None:
                raise PudevError(f"push of {remote} printed no digest; check the engine's log")
            return match.group(1)
        reason = docker.last_line(result.stderr or result.stdout)
        if attempt == attempts:
            raise PudevError(f"push of {remote} failed after {attempts} tries: {reason}")
        print(f"pudev: push of {remote} failed ({reason}); retrying in {delay:.0f} s", file=sys.stderr, flush=True)
        time.sleep(delay)
        delay *= 2
    raise AssertionError("unreachable")


def _is_this_image(client: RegistryClient, target: Target, digest: str, image_id: str) -> bool:
    """Whether the manifest `digest` is the local image `image_id`: on the containerd image store the id is
    the manifest's digest (docker push sends the manifest as stored), on the graph driver store its config's."""
    if digest == image_id:
        return True
    body, _ = client.manifest(target.repository, digest)
    return bool(json.loads(body).get("config", {}).get("digest", "") == image_id)


def push_candidate(local_tag: str, variant: str, target: Target) -> tuple[DigestRef, str]:
    """Push once; returns the candidate by digest and its tag. A second push of the same
    build finds it there and sends nothing."""
    image_id = str(images.require_image(local_tag)["Id"])
    candidates = target.candidates
    tag = candidate_tag(variant, image_id)
    attempts = int(setting("PUDEV_PUBLISH_ATTEMPTS"))
    client = RegistryClient(candidates.api, retries=attempts - 1)
    client.ping()
    remote = candidates.ref(tag)
    existing = client.digest(candidates.repository, tag)
    if existing is not None and _is_this_image(client, candidates, existing, image_id):
        print(f"pudev: {remote} is already there ({existing[:19]}); nothing pushed", file=sys.stderr, flush=True)
        return DigestRef(candidates, existing), tag
    docker.run(["tag", local_tag, remote])
    try:
        digest = _push_with_retries(remote, attempts)
    finally:
        docker.run(["rmi", remote], check=False)  # the local name only; the image stays under its own tag
    return DigestRef(candidates, digest), tag


def push_local_builds(builds: Sequence[LocalBuild], *, registry: str, ref_file: Path | None) -> None:
    """--registry is checked first, then the engine, then that every image is there and was built by this
    pudev; only then is anything pushed. Prints each candidate, and writes the last one to `ref_file`."""
    check_registry(registry)
    docker.require_daemon()  # so that a missing image below means "not built", not "no engine"
    found = []
    for build in builds:
        info = images.require_image(build.tag, build_hint=build.build_hint)
        found.append((build.tag, release_labels(images.labels_of(info), image=build.tag)))
    for local_tag, labels in found:
        candidate, tag = push_candidate(local_tag, labels.variant, parse_target(registry, labels.image))
        print(f"candidate {candidate} (tag {tag})")
        if ref_file is not None:
            ref_file.write_text(f"{candidate}\n")
