from __future__ import annotations

import pytest

from pudev.common.imageref import is_image_name, parse_image_ref

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("text", "domain", "path", "tag", "digest"),
    [
        ("pytorch/pytorch:2.5.1-cuda12.1-cudnn9-runtime", "", "pytorch/pytorch", "2.5.1-cuda12.1-cudnn9-runtime", ""),
        ("ubuntu", "", "ubuntu", "", ""),
        ("localhost:5000/team/img:v1", "localhost:5000", "team/img", "v1", ""),
        ("registry.cn-hangzhou.aliyuncs.com/ns/img@" + DIGEST, "registry.cn-hangzhou.aliyuncs.com", "ns/img", "",
         DIGEST),
        ("ghcr.io/o/i:t@" + DIGEST, "ghcr.io", "o/i", "t", DIGEST),
    ],
)
def test_valid_references(text: str, domain: str, path: str, tag: str, digest: str) -> None:
    ref = parse_image_ref(text)
    assert ref is not None
    assert (ref.domain, ref.path, ref.tag, ref.digest) == (domain, path, tag, digest)
    assert str(ref) == text


@pytest.mark.parametrize("text", ["", "UPPER/case", "a::b", "name:", "-lead", "x@sha256:short", "a b"])
def test_invalid_references(text: str) -> None:
    assert parse_image_ref(text) is None


def test_image_name_has_no_tag() -> None:
    assert is_image_name("pudev-local/pytorch-universal-dev")
    assert not is_image_name("pytorch-universal-dev:cu121")
