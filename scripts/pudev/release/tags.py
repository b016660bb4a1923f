"""Tags computed from what is inside a built image, never from what we hoped went in."""

from __future__ import annotations

from dataclasses import dataclass

from pudev.building.labels import OCI
from pudev.common.errors import PudevError
from pudev.engine import images


@dataclass(frozen=True)
class ImageFacts:
    torch: str
    cuda: str
    python: str
    revision: str
    created: str

    @property
    def cuda_tag(self) -> str:
        return "cu" + self.cuda.replace(".", "")


def read_facts(image: str) -> ImageFacts:
    """torch, CUDA and Python as the image itself reports them (its inventory)."""
    info = images.require_image(image)
    facts = images.inventory(image)
    if not facts.get("cuda"):
        raise PudevError(f"{image} holds a torch without CUDA ({facts['torch']}); refusing to tag it as a CUDA image")
    labels = images.labels_of(info)
    return ImageFacts(torch=str(facts["torch"]).split("+")[0], cuda=str(facts["cuda"]),
                      python=".".join(str(facts["python"]).split(".")[:2]),
                      revision=labels.get(f"{OCI}.revision", "unknown"),
                      created=labels.get(f"{OCI}.created", info.get("Created", "")))


def compute_tags(facts: ImageFacts, *, variant: str, is_default: bool) -> list[str]:
    """Most specific first: 2.5.1-cu121-py3.11, cu121, cu121-YYYYMMDD, cu121-<sha>, latest."""
    if facts.cuda_tag != variant:
        raise PudevError(f"the image's torch is built for CUDA {facts.cuda} ({facts.cuda_tag}) but the variant is "
                         f"{variant}; rebuild it with a matching base image")
    tags = [f"{facts.torch}-{facts.cuda_tag}-py{facts.python}", facts.cuda_tag,
            f"{facts.cuda_tag}-{facts.created[:10].replace('-', '')}"]
    if facts.revision != "unknown":
        tags.append(f"{facts.cuda_tag}-{facts.revision[:7]}")
    if is_default:
        tags.append("latest")
    return tags
