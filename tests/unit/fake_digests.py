"""A registry as bake's digest lookup sees it (unit tests have no network): the
`registry` fixture puts it in place of building/digests.py's registry_digest."""

from __future__ import annotations

import hashlib

from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.registry.names import registry_host, repository_path


class FakeRegistry:
    """What bake's digest lookup asks of a registry: every tag exists, with a digest made from its
    name, except those listed in `missing`; `down` makes every call fail as an unreachable one does."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.missing: set[str] = set()
        self.down = False

    @staticmethod
    def _key(reference: str) -> str:
        ref = parse_image_ref(reference)
        assert ref is not None
        return f"{registry_host(ref)}/{repository_path(ref)}:{ref.tag or 'latest'}"

    def digest_of(self, reference: str) -> str:
        return "sha256:" + hashlib.sha256(self._key(reference).encode()).hexdigest()

    def digest(self, host: str, repository: str, reference: str) -> str | None:
        """What digests.registry_digest answers."""
        key = f"{host}/{repository}:{reference}"
        self.asked.append(key)
        if self.down:
            raise PudevError(f"registry {host} does not answer (Connection refused) after 5 tries; check the "
                             "address and that the registry is up")
        if any(self._key(item) == key for item in self.missing):
            return None
        return "sha256:" + hashlib.sha256(key.encode()).hexdigest()
