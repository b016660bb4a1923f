"""Plan assembly for `pudev plan`, `build` and `bake`: every lock checked and hashed,
the CA bundle checked and the source read once, before anything runs. Pure: it
asks nothing of Docker; the input images' digests are added by building/digests.py."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from pudev.building.cabundle import resolve_ca_bundle
from pudev.building.labels import source_info
from pudev.building.plan import BuildPlan
from pudev.building.requirement_locks import require_lock
from pudev.config.model import Variant


@dataclass(frozen=True)
class BuildOptions:
    ca_bundle: str | None = None  # --ca-bundle; None: the host's PIP_CERT / SSL_CERT_FILE / REQUESTS_CA_BUNDLE
    no_ca_bundle: bool = False
    cache_from: tuple[str, ...] = ()
    cache_to: tuple[str, ...] = ()
    no_cache: bool = False


def plan_builds(variants: Sequence[Variant], options: BuildOptions, *, profile: str = "",
                flags: str = "") -> list[BuildPlan]:
    """One plan per variant; a bad lock or CA bundle fails here, before any build starts."""
    locks = {variant.name: require_lock(variant, profile=profile, flags=flags) for variant in variants}
    ca_bundle = resolve_ca_bundle(options.ca_bundle, disabled=options.no_ca_bundle)
    source = source_info()
    return [BuildPlan(variant=variant, source=source,
                      lock_sha256=hashlib.sha256(locks[variant.name].read_bytes()).hexdigest(),
                      ca_bundle=ca_bundle, cache_from=options.cache_from, cache_to=options.cache_to,
                      no_cache=options.no_cache)
            for variant in variants]
