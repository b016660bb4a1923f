"""`pudev sbom`: an image's SBOM made from the image itself, pushed to the registry
as an artifact that refers to the image's digest, and fetched back by that digest."""

from __future__ import annotations

from typing import Any

from pudev.common.errors import PudevError
from pudev.engine import docker, images
from pudev.registry.client import RegistryClient
from pudev.release import artifacts
from pudev.release.targets import CANDIDATE_PULL_HINT, DigestRef, parse_digest_ref, require_pushed
from pudev.reports.sbom import SBOM_TYPE, build_sbom


def _local(reference: str) -> dict[str, Any]:
    """The image's inspect data; a reference by digest is pulled when it is not here."""
    if "@sha256:" in reference:
        docker.ensure_local(reference, hint=CANDIDATE_PULL_HINT)
    return images.require_image(reference)


def write_sbom(reference: str) -> str:
    """CycloneDX JSON for the image, from its own `pudev inventory`."""
    info = _local(reference)
    inventory = images.inventory(reference)
    name, _, digest = reference.partition("@")
    if not digest:  # a local tag: the digest it was last pushed under, if any
        name = name.rsplit(":", 1)[0]
        digest = next((str(item).split("@", 1)[1] for item in info.get("RepoDigests") or []), "")
    return build_sbom(inventory, name=name, digest=digest)


def registry_target(reference: str) -> tuple[DigestRef, RegistryClient]:
    ref = parse_digest_ref(reference, flag="pudev sbom")
    client = RegistryClient(ref.target.api)
    client.ping()
    require_pushed(client, ref, flag="pudev sbom")
    return ref, client


def push_sbom(reference: str, text: str) -> str:
    """Attach the SBOM to the image's digest; returns the artifact's reference."""
    ref, client = registry_target(reference)
    digest = artifacts.attach(client, ref.target.repository, ref.digest, artifact_type=SBOM_TYPE,
                              payload=text.encode(), annotations={"org.opencontainers.image.title": "sbom.cdx.json"})
    return ref.target.by_digest(digest)


def fetch_sbom(reference: str) -> str:
    """The newest SBOM attached to the image's digest."""
    ref, client = registry_target(reference)
    found = artifacts.referrers(client, ref.target.repository, ref.digest, SBOM_TYPE)
    if not found:
        raise PudevError(f"{reference} has no SBOM attached: `pudev sbom {reference} --push` attaches one")
    return artifacts.payload(client, ref.target.repository, found[-1]).decode()
