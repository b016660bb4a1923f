from __future__ import annotations

import pytest

from pudev.common.errors import PudevError
from pudev.release.tags import ImageFacts, compute_tags

FACTS = ImageFacts(torch="2.5.1", cuda="12.1", python="3.11", revision="0123456789abcdef" * 2 + "01234567",
                   created="2026-11-30T08:00:00+00:00")


def test_tags_follow_the_official_naming() -> None:
    assert compute_tags(FACTS, variant="cu121", is_default=True) == [
        "2.5.1-cu121-py3.11", "cu121", "cu121-20261130", "cu121-0123456", "latest"]
    assert "latest" not in compute_tags(FACTS, variant="cu121", is_default=False)


def test_image_content_must_match_the_variant() -> None:
    with pytest.raises(PudevError, match=r"built for CUDA 12.1 \(cu121\) but the variant is cu118"):
        compute_tags(FACTS, variant="cu118", is_default=False)


def test_unknown_revision_gets_no_sha_tag() -> None:
    facts = ImageFacts("2.4.1", "12.1", "3.11", "unknown", "2026-01-02T00:00:00Z")
    assert compute_tags(facts, variant="cu121", is_default=False) == ["2.4.1-cu121-py3.11", "cu121", "cu121-20260102"]
