"""`pudev promote CANDIDATE...`: publish exactly the images that passed.

What promoting takes is decided from the candidates themselves: each one's labels say its variant,
the test scopes it must have passed, whether it is `latest` and every platform its variant is built
for; its recorded results (release/test.py) say what passed. The checkout's variant file is never
read: it may have changed since the build. Refused unless every required scope passed against the
digest and the candidate is unchanged since.

One platform's candidate is copied as it is: its manifest, byte for byte, to the release repository
(its blobs linked there by cross-repository mount: no rebuild, no layer sent again), then every tag
is applied. Several platforms' candidates become one OCI image index whose children are exactly
them; the tags each child's facts give must agree (a disagreement is an error, never a merge). A
promote cut short reports which tags landed; running it again completes the set."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pudev.common.errors import PudevError
from pudev.common.halves import PLATFORM_SCOPE, covering
from pudev.registry.client import RegistryClient
from pudev.registry.oci import DOCKER_MANIFEST, OCI_INDEX, content_digest
from pudev.release.pushed_image import PushedImage, pushed_image
from pudev.release.tags import ImageFacts, compute_tags
from pudev.release.targets import DigestRef, Target, parse_digest_ref, require_pushed
from pudev.release.test import SuiteResult, results

# ---- what the candidates take ----

FLAG = "pudev promote"


def _agreed(images: Sequence[PushedImage], what: str, value: Callable[[PushedImage], object], fix: str) -> None:
    """One index spans one variant, tagged one way: candidates that say otherwise are refused, all named."""
    if len({str(value(image)) for image in images}) > 1:
        said = "; ".join(f"{image.candidate}: {value(image)}" for image in images)
        raise PudevError(f"{FLAG}: the candidates disagree on {what} ({said}); {fix}")


def _parsed(references: Sequence[str]) -> list[DigestRef]:
    if not references:
        raise PudevError(f"{FLAG} takes the candidates by digest, one per platform the variant is built for: "
                         "REGISTRY/REPO-candidates@sha256:...")
    candidates = [parse_digest_ref(reference, flag=FLAG) for reference in references]
    if len({candidate.target for candidate in candidates}) != 1:
        raise PudevError(f"{FLAG}: every candidate must come from one candidate repository")
    return candidates


def promote_candidates(references: Sequence[str]) -> tuple[DigestRef, list[str]]:
    """Returns the release reference (an image, or the index of the platforms' images) and its tags."""
    candidates = _parsed(references)
    client = RegistryClient(candidates[0].target.api)
    client.ping()
    for candidate in candidates:
        require_pushed(client, candidate, flag=FLAG)
    images = [pushed_image(client, candidate) for candidate in candidates]
    _agreed(images, "their variant (label org.pudev.variant)", lambda image: image.labels.variant,
            "promote each variant's candidates on their own")
    _agreed(images, "being latest (label org.pudev.latest)", lambda image: image.labels.latest,
            "build every platform from one checkout, whose default_variant decides it, and push those")
    _agreed(images, "the variant's platforms (label org.pudev.platforms)",
            lambda image: ", ".join(image.labels.platforms), "build every platform from one checkout and push those")
    labels = images[0].labels
    built_for = labels.platforms
    found = {candidate.digest: results(client, candidate) for candidate in candidates}
    if len(built_for) == 1 and len(candidates) == 1:
        return promote(candidates[0], found=found[candidates[0].digest], variant=labels.variant,
                       is_default=labels.latest, required=labels.required_tests, client=client)
    # Each platform's build carries its own required scopes (an emulated one may require the platform scope).
    required = {image.platform: image.labels.required_tests for image in images}
    return promote_index(candidates, found=found, variant=labels.variant, platforms=built_for,
                         is_default=labels.latest, required=required, client=client)


# ---- one platform's image ----

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
        # The platform scope is also proven by a CPU half run: the latest of the two counts.
        covering_results = [latest[name] for name in covering(half) if name in latest]
        if not covering_results:
            flag = {"gpu": " --gpu-only", PLATFORM_SCOPE: " --platform-only"}.get(half, " --cpu-only")
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
    if content_digest(body) != candidate.digest:
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
    """`found`: the candidate's recorded results (release.test.results), read once by the caller.
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
    media_type = json.loads(manifest).get("mediaType") or DOCKER_MANIFEST
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


# ---- one index of every platform's image ----

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
    digest = content_digest(index)
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
