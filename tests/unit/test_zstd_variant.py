"""pudev zstd's reading of an image: where the base ends (its layers get the fast level, the project's the
hard one, and the download-size check adds up the project's), and the refusals before any work."""

from __future__ import annotations

import re

import pytest

from pudev.common.errors import PudevError
from pudev.paths import REPO_ROOT
from pudev.release.zstd_variant import FIRST_OWN_LAYER, base_layer_count, publish_zstd_tags

DOCKERFILE = REPO_ROOT / "docker" / "Dockerfile"
LAYER_MAKING = ("RUN", "COPY", "ADD")


def _history(*steps: tuple[str, bool]) -> dict[str, object]:
    return {"history": [{"created_by": text, **({"empty_layer": True} if empty else {})} for text, empty in steps]}


def test_the_base_ends_before_the_first_own_layer() -> None:
    config = _history(("/bin/sh -c #(nop) ADD file:abc in /", False), ("CMD [\"bash\"]", True),
                      ("RUN pip install torch # buildkit", False), ("USER 0:0", True),
                      (f"RUN |4 CXX_STANDARD=c++17 /bin/bash -c sh {FIRST_OWN_LAYER} none # buildkit", False),
                      ("RUN tar -xpf /tmp/staged/layer.tar -C / # buildkit", False))
    assert base_layer_count(config) == 2
    assert base_layer_count(_history(("RUN true", False))) is None  # not an image pudev built


def test_the_dockerfiles_first_own_layer_is_the_mark() -> None:
    """The first instruction of the final stage that makes a layer is the one the mark names: a step moved
    in front of it would be counted as the base's (compressed at the fast level, left out of the total)."""
    final = DOCKERFILE.read_text().split("AS final", 1)[1].replace("\\\n", " ")
    first = next(line for line in final.splitlines() if line.split(" ", 1)[0] in LAYER_MAKING)
    assert FIRST_OWN_LAYER in re.sub(r"--mount=\S+", "", first), first  # the command runs it, not a mount alone


@pytest.mark.parametrize(("references", "problem"), [
    ([], "give the released tags"),
    (["ghcr.io/org/image@sha256:" + "0" * 64], "not a released tag"),
    (["pytorch-universal-dev:cu121"], "not a released tag"),
    (["ghcr.io/org/image:cu121", "ghcr.io/other/image:latest"], "every tag must be in the repository"),
])
def test_bad_references_are_refused_before_the_registry_is_asked(references: list[str], problem: str) -> None:
    with pytest.raises(PudevError, match=problem):
        publish_zstd_tags(references)
