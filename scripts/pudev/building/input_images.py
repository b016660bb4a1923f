"""The images a build starts from, and what only the engine (or a registry) knows
of them: their digests and the base's local id. A plan that lacks one holds its
place with a Fact's placeholder, which `pudev plan` prints and `pudev build`
fills in after pulling (building/digests.py): the command and the note about it are
both read from the one rendering, so they cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pudev.config.model import Variant


@dataclass(frozen=True)
class ImageIdentity:
    """An input image as resolved: its registry digest, and its local id when the engine has it."""

    digest: str = ""  # sha256:... of the manifest (or index) the reference names
    image_id: str = ""  # the engine's id; the only identity of images built here (stand-ins)

    @property
    def pin(self) -> str:
        return self.digest or self.image_id


@dataclass(frozen=True)
class Fact:
    """One thing the engine knows once it has pulled `image`, named as the plan prints it."""

    name: str  # BASE_DIGEST, TOOLKIT_A_DIGEST, BASE_ID ...
    image: str

    @property
    def placeholder(self) -> str:
        return f"<{self.name}>"  # never in a real value: no reference, version or digest holds "<"

    def occurs_in(self, values: Iterable[str]) -> bool:
        return any(self.placeholder in value for value in values)


@dataclass(frozen=True)
class InputImage:
    """An image the build starts from: its slot (the prefix of its facts' names), its name among
    the record's inputs, the reference, and its identity (empty: not known to this plan)."""

    slot: str  # BASE, TOOLKIT_A, TOOLKIT_B
    key: str  # base, toolkit 12.1
    reference: str
    identity: ImageIdentity = ImageIdentity()

    @property
    def digest_fact(self) -> Fact:
        return Fact(f"{self.slot}_DIGEST", self.reference)

    @property
    def id_fact(self) -> Fact:
        return Fact(f"{self.slot}_ID", self.reference)

    @property
    def pin(self) -> str:
        """Its digest (the local id of an image built here), or the place pudev build fills in."""
        return self.identity.pin or self.digest_fact.placeholder

    @property
    def labels(self) -> tuple[str, str]:
        """(digest, local id) as the base's labels carry them; "" for a digest a local image lacks.
        Either is known only once the engine has the image, unless the reference pins the digest."""
        known = self.identity.image_id != ""
        digest = self.identity.digest if known or self.identity.digest else self.digest_fact.placeholder
        return digest, self.identity.image_id or self.id_fact.placeholder


def input_images(variant: Variant, images: Mapping[str, ImageIdentity] | None = None) -> tuple[InputImage, ...]:
    """The base, then each toolkit slot, with what `images` (reference -> identity) knows of each."""
    slots = [("BASE", "base", variant.base_image)]
    slots += [(f"TOOLKIT_{slot}", f"toolkit {toolkit.version}", toolkit.image)
              for slot, toolkit in zip("AB", variant.toolkits, strict=True)]
    known = images or {}
    return tuple(InputImage(slot, key, ref, known.get(ref, ImageIdentity())) for slot, key, ref in slots)


def every_fact(inputs: Iterable[InputImage]) -> tuple[Fact, ...]:
    return tuple(fact for image in inputs for fact in (image.digest_fact, image.id_fact))
