"""What a pushed candidate says about itself, read through the registry alone: the platform
its config declares and its release labels (the config's labels: its variant, required tests,
`latest` and every platform its variant is built for). Only the config blob is read, never a
layer. `pudev promote` decides from these, never from the checkout."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pudev.common.errors import PudevError
from pudev.registry.client import RegistryClient
from pudev.release.image_labels import ReleaseLabels, release_labels
from pudev.release.targets import DigestRef


@dataclass(frozen=True)
class PushedImage:
    candidate: DigestRef
    manifest: bytes
    platform: str  # linux/arm64: the config's OS and architecture (no CPU variant), as the matrix names platforms
    labels: ReleaseLabels


def pushed_image(client: RegistryClient, candidate: DigestRef) -> PushedImage:
    body, _ = client.manifest(candidate.target.repository, candidate.digest)
    data: dict[str, Any] = json.loads(body)
    if "layers" not in data:
        raise PudevError(f"{candidate} is an index already; give each platform's candidate by its own digest")
    config = json.loads(client.get_blob(candidate.target.repository, data["config"]["digest"]))
    labels = (config.get("config") or {}).get("Labels") or {}
    return PushedImage(candidate, body, f"{config.get('os', '')}/{config.get('architecture', '')}",
                       release_labels({str(key): str(value) for key, value in labels.items()}, image=str(candidate)))
