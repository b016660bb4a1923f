"""`pudev promote CANDIDATE...`: decide from the candidates themselves what promoting them
takes, then do it. Each candidate's labels say its variant, the test scopes it must have
passed, whether it is `latest` and every platform its variant is built for; its recorded
results say what passed. The checkout's variant file is never read: it may
have changed since the build. One platform's candidate becomes one image (promote.py);
several become one OCI index (platform_index.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pudev.common.errors import PudevError
from pudev.registry.client import RegistryClient
from pudev.release.platform_index import promote_index
from pudev.release.promote import promote
from pudev.release.pushed_image import PushedImage, pushed_image
from pudev.release.result_artifacts import results
from pudev.release.targets import DigestRef, parse_digest_ref, require_pushed

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
    # Each platform's build carries its own required scopes (an emulated one may require the platform proof).
    required = {image.platform: image.labels.required_tests for image in images}
    return promote_index(candidates, found=found, variant=labels.variant, platforms=built_for,
                         is_default=labels.latest, required=required, client=client)
