"""`pudev promote CANDIDATE@sha256:...`: publish exactly the image that
passed. The candidate's manifest is copied, byte for byte, to the release
repository (its blobs linked there by cross-repository mount: no rebuild, no layer
sent again), then every tag is applied. Refused unless each half of the suite the
variant requires passed against that digest, and refused when the candidate was
changed after testing. A promote cut short reports which tags landed; running it
again completes the set.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from pudev.common.errors import PudevError
from pudev.common.halves import PLATFORM_PROOF, covering
from pudev.registry.client import RegistryClient
from pudev.release.tags import ImageFacts, compute_tags
from pudev.release.targets import DigestRef, Target
from pudev.testing.recorded_results import SuiteResult


@dataclass
class Progress:
    """What this run knows has landed, for the report when the registry goes away."""

    landed: set[str] = field(default_factory=set)


def passing_results(candidate: DigestRef, found: list[SuiteResult], required: tuple[str, ...],
                    variant: str) -> SuiteResult:
    """The latest result of each required half must be a pass for this variant; returns the first one."""
    latest = {result.half: result for result in found}
    proofs = []
    for half in required:
        # The platform proof is also proven by a CPU half run: the latest of the two counts.
        covering_results = [latest[name] for name in covering(half) if name in latest]
        if not covering_results:
            flag = {"gpu": " --gpu-only", PLATFORM_PROOF: " --platform-proof"}.get(half, " --cpu-only")
            raise PudevError(f"{candidate} has no {half} test result, so it was never tested that way: run "
                             f"`pudev test {candidate}{flag}` first")
        result = max(covering_results, key=lambda item: item.tested_at)
        if not result.passed:
            raise PudevError(f"{candidate} failed its {result.half} test ({result.tested_at}): fix it, rebuild and "
                             "push a new candidate; a failed digest is never promoted")
        if result.variant != variant:
            raise PudevError(f"{candidate} was tested as variant {result.variant}, not {variant}: promote it as "
                             f"{result.variant}")
        proofs.append(result)
    return proofs[0]


def check_unchanged(client: RegistryClient, candidate: DigestRef, tested: SuiteResult) -> bytes:
    """The manifest must still be what was tested: its bytes hash to the digest, and the tag it
    was tested under still points at it."""
    body, _ = client.manifest(candidate.target.repository, candidate.digest)
    if "sha256:" + hashlib.sha256(body).hexdigest() != candidate.digest:
        raise PudevError(f"{candidate}: the registry serves a manifest that does not match its digest; refusing "
                         "a tampered candidate")
    if tested.candidate_tag:
        now = client.digest(candidate.target.repository, tested.candidate_tag)
        if now != candidate.digest:
            raise PudevError(f"{candidate.target.ref(tested.candidate_tag)} now points at {now or 'nothing'}, not "
                             f"the tested {candidate.digest}: the candidate changed after testing; refusing it")
    return body


def _blobs(manifest: bytes) -> list[str]:
    data = json.loads(manifest)
    if "layers" not in data:
        raise PudevError("the candidate is an index, not an image manifest; promote one platform's image")
    return [data["config"]["digest"], *(layer["digest"] for layer in data["layers"])]


def promote(candidate: DigestRef, *, found: list[SuiteResult], variant: str, is_default: bool,
            required: tuple[str, ...], client: RegistryClient) -> tuple[DigestRef, list[str]]:
    """`found`: the candidate's recorded results (result_artifacts.results), read once by the caller.
    Returns the release reference and its tags. Raises PudevError with a landed/missing report."""
    tested = passing_results(candidate, found, required, variant)
    manifest = check_unchanged(client, candidate, tested)
    tags = compute_tags(ImageFacts(**tested.facts), variant=variant, is_default=is_default)
    release = candidate.target.release
    progress = Progress()
    try:
        _copy(client, candidate, release, manifest, tags=tags, progress=progress)
    except PudevError as error:
        raise PudevError(f"promote of {candidate} to {release.host}/{release.repository} failed: {error}",
                         detail=report(release, candidate.digest, tags, progress)) from None
    return DigestRef(release, candidate.digest), tags


def _copy(client: RegistryClient, candidate: DigestRef, release: Target, manifest: bytes, *, tags: list[str],
          progress: Progress) -> None:
    copy_blobs(client, candidate, release, manifest)
    media_type = json.loads(manifest).get("mediaType") or "application/vnd.docker.distribution.manifest.v2+json"
    put_tags(client, release, candidate.digest, manifest, media_type, tags=tags, progress=progress)


def copy_blobs(client: RegistryClient, candidate: DigestRef, release: Target, manifest: bytes) -> None:
    """Link the candidate's config and layers into the release repository (cross-repository mount)."""
    for blob in _blobs(manifest):
        if client.blob_exists(release.repository, blob):
            continue
        if not client.mount_blob(release.repository, blob, candidate.target.repository):
            raise PudevError(f"the registry would not mount blob {blob[:19]} from {candidate.target.repository}; "
                             "promote sends no layer, so the candidate must live in the same registry")


def put_tags(client: RegistryClient, release: Target, digest: str, manifest: bytes, media_type: str, *,
             tags: list[str], progress: Progress) -> None:
    """Point each tag at `manifest` (whose digest is `digest`), skipping those already there, then
    check that every one does."""
    before = {tag: client.digest(release.repository, tag) for tag in tags}
    progress.landed = {tag for tag, found in before.items() if found == digest}
    for tag in tags:
        if tag in progress.landed:
            print(f"pudev: {release.ref(tag)} already at {digest[:19]}", flush=True)
            continue
        answer = client.put_manifest(release.repository, tag, manifest, media_type)
        stored = answer.headers.get("Docker-Content-Digest", "")
        if stored and stored != digest:
            raise PudevError(f"{release.ref(tag)} was stored as {stored}, not {digest}")
        progress.landed.add(tag)
        print(f"pudev: tagged {release.ref(tag)}", flush=True)
    missing = [tag for tag in tags if client.digest(release.repository, tag) != digest]
    if missing:
        progress.landed -= set(missing)
        raise PudevError(f"{', '.join(missing)} do not point at {digest} after tagging")


def report(release: Target, digest: str, tags: list[str], progress: Progress) -> str:
    """Which tags exist remotely and which do not. When the registry is gone, what this run saw."""
    quick = RegistryClient(release.api, retries=0, timeout=5)
    lines = ["remote state of each tag:"]
    for tag in tags:
        try:
            found = quick.digest(release.repository, tag)
        except PudevError:
            seen = "landed" if tag in progress.landed else "not landed"
            lines.append(f"  {release.ref(tag)}: {seen} (as this run saw it; the registry does not answer now)")
            continue
        state = "missing" if found is None else "landed" if found == digest else f"points at another image " \
                                                                                  f"({found[:19]})"
        lines.append(f"  {release.ref(tag)}: {state}")
    lines.append("run the same `pudev promote` again to complete it; nothing is sent twice")
    return "\n".join(lines)

