"""Which exact images a plan builds from: the digests (or, for images built here,
the local ids) of its base and toolkit images. Not pure: it asks the engine and
the registry, and hands the answers to the pure plan as `images`.

Each command asks in its own order, each image once:
  build  the engine, after pulling: what BuildKit will really use (the pull step's own inspection)
  plan   the engine where one answers, else a pinned reference; the rest the build resolves
  bake   a pinned reference (nothing asked), the engine, then the registry; else one error
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pudev.building.input_images import ImageIdentity, input_images
from pudev.building.plan import BuildPlan
from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.engine import images

Lookup = Callable[[str], ImageIdentity | None]


def pinned(reference: str) -> ImageIdentity | None:
    """The digest written in an `image@sha256:...` reference: it names the image exactly."""
    ref = parse_image_ref(reference)
    return ImageIdentity(digest=ref.digest) if ref is not None and ref.digest else None


def on_engine(reference: str) -> ImageIdentity | None:
    """The local copy's identity; None where the engine lacks it, or there is no engine (planning needs none)."""
    try:
        digest, image_id = images.identity(reference)
    except PudevError:
        return None
    return ImageIdentity(digest, image_id) if image_id else None


def already_inspected(infos: Mapping[str, dict[str, Any]]) -> Lookup:
    """The identities of images the caller has just inspected (or pulled): no second question to the engine."""

    def lookup(reference: str) -> ImageIdentity | None:
        info = infos.get(reference)
        if info is None:
            return None
        digest, image_id = images.identity(reference, info)
        return ImageIdentity(digest, image_id)

    return lookup


def registry_digest(host: str, repository: str, tag: str) -> str | None:
    """The registry's digest for one tag, None for no such tag (the client is imported here:
    only bake asks a registry, and plan and build start faster without it)."""
    from pudev.registry.client import RegistryClient

    return RegistryClient(host).digest(repository, tag)


def in_registry(reference: str) -> ImageIdentity:
    """The digest the registry gives the reference's tag, or one error naming the image and the fix."""
    from pudev.registry.names import registry_host, repository_path

    ref = parse_image_ref(reference)
    assert ref is not None  # references are validated when the matrix loads
    fix = f"run `pudev pin` on a machine that reaches the registry, or pull it (`docker pull {reference}`)"
    host = registry_host(ref)
    try:
        digest = registry_digest(host, repository_path(ref), ref.tag or "latest")
    except PudevError as error:
        raise PudevError(f"cannot resolve the digest of {reference}: {error}; {fix}") from None
    if digest is None:
        raise PudevError(f"cannot resolve the digest of {reference}: {host} has no such tag; {fix}")
    return ImageIdentity(digest=digest)


FOR_PLAN: tuple[Lookup, ...] = (on_engine, pinned)  # the engine first: it also knows the local id the build labels
FOR_BAKE: tuple[Lookup, ...] = (pinned, on_engine, in_registry)


def _first(reference: str, lookups: Sequence[Lookup]) -> ImageIdentity | None:
    for lookup in lookups:
        identity = lookup(reference)
        if identity is not None:
            return identity
    return None


def identify(plans: Sequence[BuildPlan], lookups: Sequence[Lookup]) -> list[BuildPlan]:
    """The plans with their input images' identities: for each image, the first lookup that knows it."""
    found: dict[str, ImageIdentity] = {}
    for reference in dict.fromkeys(image.reference for plan in plans for image in input_images(plan.variant)):
        identity = _first(reference, lookups)
        if identity is not None:
            found[reference] = identity
    return [dataclasses.replace(plan, images={image.reference: found[image.reference]
                                              for image in input_images(plan.variant) if image.reference in found})
            for plan in plans]
