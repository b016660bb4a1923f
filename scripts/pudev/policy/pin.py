"""`pudev pin`: resolve every base and toolkit image to its digest through the
registry's API and write `image@sha256:...` into the variant file, keeping its
comments and layout. Run it on a machine that can reach the registries."""

from __future__ import annotations

import re

from pudev.common.errors import PudevError
from pudev.common.imageref import ImageRef, parse_image_ref
from pudev.common.inputs import InputFile
from pudev.config.loader import load_matrix
from pudev.registry.client import RegistryClient
from pudev.registry.names import registry_host, repository_path


def resolve_digest(reference: str) -> str:
    ref = parse_image_ref(reference)
    if ref is None:
        raise PudevError(f"cannot pin '{reference}': not a valid image reference")
    unpinned = ImageRef(ref.domain, ref.path, ref.tag or "latest", "")
    client = RegistryClient(registry_host(unpinned))
    digest = client.digest(repository_path(unpinned), unpinned.tag)
    if digest is None:
        raise PudevError(f"cannot pin '{reference}': {registry_host(unpinned)} has no such tag")
    return digest


def pin_file(source: InputFile) -> dict[str, str]:
    """Rewrite each image reference in the variant file with its current digest; returns old -> new."""
    matrix = load_matrix(source)
    path = source.path
    references = {v.base_image for v in matrix.variants.values()}
    references |= {t.image for v in matrix.variants.values() for t in v.toolkits}
    text = path.read_text()
    changes = {}
    for reference in sorted(references):
        ref = parse_image_ref(reference)
        assert ref is not None  # validated by load_matrix
        bare = str(ImageRef(ref.domain, ref.path, ref.tag, ""))
        pinned = f"{bare}@{resolve_digest(bare)}"
        if pinned != reference:
            text = re.sub(rf'"{re.escape(reference)}"', f'"{pinned}"', text)
            changes[reference] = pinned
    path.write_text(text)
    load_matrix(source)  # the result must still be a valid matrix
    return changes
