"""A registry kept in memory, for release logic without a network: the calls push, test and
promote make of a registry (manifests, tags, blobs, mounts), answered from dictionaries."""

from __future__ import annotations

import hashlib

import requests

from pudev.common.errors import PudevError
from pudev.registry.client import RegistryClient
from pudev.release.targets import Target

RELEASE = Target("registry.example", "org/dev-image")


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class MemoryRegistry(RegistryClient):
    """The calls promote makes, answered from dictionaries: manifests by (repository, digest), tags by
    (repository, tag), blobs by (repository, digest). Every write is listed in `writes`."""

    def __init__(self) -> None:
        super().__init__("registry.example", retries=0)
        self.manifests: dict[tuple[str, str], tuple[bytes, str]] = {}
        self.tags: dict[tuple[str, str], str] = {}
        self.blobs: dict[tuple[str, str], bytes] = {}
        self.writes: list[tuple[str, str, str]] = []  # (what, repository, reference)

    def digest(self, repository: str, reference: str, *, push_scope: bool = False) -> str | None:
        if reference.startswith("sha256:"):
            return reference if (repository, reference) in self.manifests else None
        return self.tags.get((repository, reference))

    def manifest(self, repository: str, reference: str) -> tuple[bytes, str]:
        found = self.digest(repository, reference)
        if found is None:
            raise PudevError(f"{self.host}/{repository}@{reference}: registry answered 404")
        return self.manifests[(repository, found)]

    def put_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> requests.Response:
        digest = digest_of(body)
        if reference.startswith("sha256:"):
            assert reference == digest, "a manifest stored by digest must hash to it"
        else:
            self.tags[(repository, reference)] = digest
        self.manifests[(repository, digest)] = (body, media_type)
        self.writes.append(("manifest", repository, reference))
        answer = requests.Response()
        answer.status_code = 201
        answer.headers["Docker-Content-Digest"] = digest
        return answer

    def blob_exists(self, repository: str, digest: str) -> bool:
        return (repository, digest) in self.blobs

    def get_blob(self, repository: str, digest: str) -> bytes:
        return self.blobs[(repository, digest)]

    def mount_blob(self, repository: str, digest: str, source: str) -> bool:
        if (source, digest) not in self.blobs:
            return False
        self.blobs[(repository, digest)] = self.blobs[(source, digest)]
        self.writes.append(("blob", repository, digest))
        return True

    def put_blob(self, repository: str, data: bytes) -> str:
        digest = digest_of(data)
        self.blobs[(repository, digest)] = data
        return digest

    def release_writes(self) -> list[tuple[str, str, str]]:
        return [write for write in self.writes if write[1] == RELEASE.repository]

    def ping(self) -> None:
        """It is always up."""
