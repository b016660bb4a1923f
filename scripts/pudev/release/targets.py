"""Where images go: the release repository a user pulls from, the candidate
repository beside it that holds builds until they passed, and references to an
exact pushed manifest (REGISTRY/REPO@sha256:...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.registry.names import api_host

if TYPE_CHECKING:
    from pudev.registry.client import RegistryClient

CANDIDATE_SUFFIX = "-candidates"
CANDIDATE_PULL_HINT = "check the reference (what `pudev push` printed) and that you are logged in to its registry"


@dataclass(frozen=True)
class Target:
    host: str  # as written in image references (docker.io, ghcr.io, 127.0.0.1:5000)
    repository: str  # path inside the registry, e.g. org/pytorch-universal-dev

    @property
    def api(self) -> str:
        return api_host(self.host)

    def ref(self, tag: str) -> str:
        return f"{self.host}/{self.repository}:{tag}"

    def by_digest(self, digest: str) -> str:
        return f"{self.host}/{self.repository}@{digest}"

    @property
    def candidates(self) -> Target:
        return Target(self.host, self.repository + CANDIDATE_SUFFIX)

    @property
    def release(self) -> Target:
        return Target(self.host, self.repository.removesuffix(CANDIDATE_SUFFIX))


def parse_target(registry: str, image_name: str) -> Target:
    """`ghcr.io/org` + `pudev-local/pytorch-universal-dev` -> ghcr.io, org/pytorch-universal-dev."""
    name = image_name.rsplit("/", 1)[-1]
    ref = parse_image_ref(f"{registry.rstrip('/')}/{name}")
    if not registry or ref is None or not ref.domain or ref.tag or ref.digest:
        raise PudevError(f"--registry {registry}: not a registry; write HOST[:PORT][/ORG], e.g. ghcr.io/my-org or "
                         "127.0.0.1:5000")
    return Target(host=ref.domain, repository=ref.path)


def check_registry(registry: str) -> str:
    """--registry checked before anything is asked of the engine: `registry` when a repository fits under it
    (the image's own name, read from its label later, is one path component like the one tried here)."""
    parse_target(registry, "image")
    return registry


@dataclass(frozen=True)
class DigestRef:
    """An exact pushed manifest: where it is and its digest (and the tag it was given, if known)."""

    target: Target
    digest: str

    def __str__(self) -> str:
        return self.target.by_digest(self.digest)


def is_image_reference(text: str) -> bool:
    """REGISTRY/REPO@sha256:... or REGISTRY/REPO:TAG, as opposed to a variant name."""
    ref = parse_image_ref(text)
    return ref is not None and bool(ref.domain) and ("@" in text or ":" in text.split("/", 1)[1])


def parse_digest_ref(text: str, *, flag: str) -> DigestRef:
    ref = parse_image_ref(text)
    if ref is None or not ref.domain or not ref.digest:
        raise PudevError(f"{flag} {text}: not a reference by digest; write REGISTRY/REPOSITORY@sha256:<64 hex> "
                         "(what `pudev push` printed)")
    return DigestRef(Target(ref.domain, ref.path), ref.digest)


def require_pushed(client: RegistryClient, ref: DigestRef, *, flag: str) -> None:
    """Stop at once when the digest is not in the registry, instead of advising a step that would fail too."""
    if client.digest(ref.target.repository, ref.digest) is None:
        raise PudevError(f"{flag} {ref}: {ref.target.host} has no image {ref.digest} in {ref.target.repository}; "
                         "check the reference (what `pudev push` printed) and the registry you are logged in to")
