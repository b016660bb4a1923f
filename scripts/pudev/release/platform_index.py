"""One tag for every platform: an OCI image index whose children are exactly the candidates that
passed, one per platform the variant is built for. Each child is checked as a single-platform
promote checks its candidate (every required half passed against that digest, unchanged since),
and the failure names the platform. The tags each child's facts give must agree: a disagreement
is an error, never a merge."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from pudev.common.errors import PudevError
from pudev.registry.client import RegistryClient
from pudev.release.promote import Progress, check_unchanged, copy_blobs, passing_results, put_tags, report
from pudev.release.tags import ImageFacts, compute_tags
from pudev.release.targets import DigestRef
from pudev.testing.recorded_results import SuiteResult

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


@dataclass(frozen=True)
class Child:
    candidate: DigestRef
    platform: str  # linux/arm64, from the image's own config, as the matrix names it
    manifest: bytes
    media_type: str
    tags: tuple[str, ...]
    cpu_variant: str = ""  # the config's variant (v8 on arm64), kept in the index's platform object


def platform_of(client: RegistryClient, candidate: DigestRef, manifest: bytes) -> str:
    """The platform the image's config declares (what `docker pull --platform` matches)."""
    data = json.loads(manifest)
    if "layers" not in data:
        raise PudevError(f"{candidate} is an index already; give each platform's candidate by its own digest")
    config = json.loads(client.get_blob(candidate.target.repository, data["config"]["digest"]))
    variant = f"/{config['variant']}" if config.get("variant") else ""
    return f"{config.get('os', '')}/{config.get('architecture', '')}{variant}"


def _child(client: RegistryClient, candidate: DigestRef, found: list[SuiteResult], *, variant: str,
           required: dict[str, tuple[str, ...]], is_default: bool) -> Child:
    body, media_type = client.manifest(candidate.target.repository, candidate.digest)
    # Engines record arm64 images as arm64/v8; the matrix names platforms by OS and architecture alone.
    system, architecture, *cpu_variant = platform_of(client, candidate, body).split("/", 2)
    platform = f"{system}/{architecture}"
    try:
        # A platform the variant is not built for needs nothing here: _check_platforms names it.
        tested = passing_results(candidate, found, required.get(platform, ()) or ("cpu",), variant)
        check_unchanged(client, candidate, tested)
        tags = compute_tags(ImageFacts(**tested.facts), variant=variant, is_default=is_default)
    except PudevError as error:
        raise PudevError(f"the {platform} child: {error}") from None
    return Child(candidate, platform, body, json.loads(body).get("mediaType") or media_type, tuple(tags),
                 "".join(cpu_variant))


def _check_platforms(children: list[Child], platforms: tuple[str, ...], variant: str) -> None:
    seen: dict[str, Child] = {}
    for child in children:
        if child.platform in seen:
            raise PudevError(f"{seen[child.platform].candidate} and {child.candidate} are both {child.platform}: give "
                             "one candidate per platform")
        if child.platform not in platforms:
            raise PudevError(f"{child.candidate} is {child.platform}, which variant {variant} is not built for "
                             f"({', '.join(platforms)})")
        seen[child.platform] = child
    missing = [platform for platform in platforms if platform not in seen]
    if missing:
        raise PudevError(f"variant {variant} is built for {', '.join(platforms)}, and no candidate is given for "
                         f"{', '.join(missing)}: push and test that platform's build, then promote all of them "
                         "together")
    first = children[0]
    for child in children[1:]:
        if child.tags != first.tags:
            raise PudevError(f"the platforms' images disagree on their tags ({first.platform}: "
                             f"{', '.join(first.tags)}; {child.platform}: {', '.join(child.tags)}): rebuild them "
                             "from one commit, with one torch and Python, on one day")


def index_of(children: list[Child]) -> bytes:
    """The OCI image index: each child by digest, size and platform, in the order given."""
    manifests = []
    for child in children:
        system, architecture = child.platform.split("/", 1)
        platform = {"architecture": architecture, "os": system,
                    **({"variant": child.cpu_variant} if child.cpu_variant else {})}
        manifests.append({"mediaType": child.media_type, "digest": child.candidate.digest,
                          "size": len(child.manifest), "platform": platform})
    return json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests}, indent=2).encode()


def promote_index(candidates: list[DigestRef], *, found: dict[str, list[SuiteResult]], variant: str,
                  platforms: tuple[str, ...], is_default: bool, required: dict[str, tuple[str, ...]],
                  client: RegistryClient) -> tuple[DigestRef, list[str]]:
    """Check every child against the halves its platform requires (`required`, by platform), copy
    each to the release repository by digest, then point every tag at the index of them. Returns the
    index by digest and its tags."""
    children = [_child(client, candidate, found.get(candidate.digest, []), variant=variant, required=required,
                       is_default=is_default) for candidate in candidates]
    _check_platforms(children, platforms, variant)
    order = {platform: position for position, platform in enumerate(platforms)}
    children.sort(key=lambda child: order[child.platform])
    index = index_of(children)
    digest = "sha256:" + hashlib.sha256(index).hexdigest()
    release = candidates[0].target.release
    tags = list(children[0].tags)
    progress = Progress()
    try:
        for child in children:
            copy_blobs(client, child.candidate, release, child.manifest)
            client.put_manifest(release.repository, child.candidate.digest, child.manifest, child.media_type)
        put_tags(client, release, digest, index, OCI_INDEX, tags=tags, progress=progress)
    except PudevError as error:
        raise PudevError(f"promote of the {variant} index to {release.host}/{release.repository} failed: {error}",
                         detail=report(release, digest, tags, progress)) from None
    return DigestRef(release, digest), tags
