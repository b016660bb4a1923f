from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pudev.common.errors import PudevError
from pudev.matrix import load_matrix
from pudev.paths import VARIANTS_FILE

WriteVariants = Callable[..., Path]


def test_real_matrix_declares_both_variants() -> None:
    matrix = load_matrix(VARIANTS_FILE)
    assert list(matrix.variants) == ["cu118", "cu121"]
    cu118, cu121 = matrix.variants["cu118"], matrix.variants["cu121"]
    assert cu118.base_image == "pytorch/pytorch:2.5.1-cuda11.8-cudnn9-runtime"
    assert cu121.base_image == "pytorch/pytorch:2.5.1-cuda12.1-cudnn9-runtime"
    assert {t.image for t in cu118.toolkits} == {
        "nvidia/cuda:11.8.0-devel-ubuntu22.04",
        "nvidia/cuda:12.1.1-devel-ubuntu22.04",
    }
    assert (cu118.default_toolkit, cu121.default_toolkit) == ("11.8", "12.1")
    assert cu118.torch == cu121.torch == "2.5.1"
    assert matrix.default_variant == "cu121"


def test_build_mirror_defaults_to_mirror() -> None:
    variant = load_matrix(VARIANTS_FILE).variants["cu121"]
    assert variant.build_mirror == variant.mirror == "aliyun"


def _error(path: Path, overrides: dict[str, dict[str, object]] | None = None) -> str:
    with pytest.raises(PudevError) as caught:
        load_matrix(path, overrides)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_unknown_key_names_file_variant_and_field(write_variants: WriteVariants) -> None:
    path = write_variants(('[variants.cu118]\n', '[variants.cu118]\ntorch_version = "2.5.1"\n'))
    message = _error(path)
    assert message.startswith(str(path))
    assert "variant cu118" in message and "unknown field 'torch_version'" in message


def test_cuda_version_without_toolkit_entry(write_variants: WriteVariants) -> None:
    path = write_variants(('toolkits = ["11.8", "12.1"]\ndefault_toolkit = "11.8"',
                           'toolkits = ["11.8", "12.4"]\ndefault_toolkit = "11.8"'))
    message = _error(path)
    assert "variant cu118" in message and "field 'toolkits'" in message and "CUDA 12.4 has no toolkit entry" in message


def test_malformed_image_reference(write_variants: WriteVariants) -> None:
    path = write_variants(("pytorch/pytorch:2.5.1-cuda12.1-cudnn9-runtime", "PyTorch/PyTorch::latest"))
    message = _error(path)
    assert "variant cu121" in message and "field 'base_image'" in message and "not a valid image reference" in message


def test_missing_field(write_variants: WriteVariants) -> None:
    path = write_variants(('cuda = "11.8"\n', ""))
    assert "variant cu118: field 'cuda' is missing" in _error(path)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"torch": "2.5"}, "field 'torch': '2.5' is not a torch release"),
        ({"default_toolkit": "12.1", "cuda": "11.8"}, "does not match torch's CUDA 11.8"),
        ({"toolkit.12.1.max_gcc": "x"}, "field 'max_gcc'"),
        ({"mirror": "ustc"}, "field 'mirror': 'ustc' is not a mirror"),
        ({"toolkits": ["11.8"]}, "is not two toolkit slots"),
        ({"toolkits": ["11.8", "11.8"]}, "lists a toolkit twice"),
    ],
)
def test_invalid_override_is_one_line(override: dict[str, object], expected: str) -> None:
    assert expected in _error(VARIANTS_FILE, {"cu121": override})


def test_override_adds_a_toolkit_to_one_variant_only() -> None:
    matrix = load_matrix(VARIANTS_FILE, {"cu121": {
        "toolkits": ["11.8", "12.4"], "default_toolkit": "12.4",
        "toolkit.12.4.image": "example.com/cuda:12.4", "toolkit.12.4.max_gcc": 13,
    }})
    cu121 = matrix.variants["cu121"]
    assert [(t.version, t.image, t.max_gcc) for t in cu121.toolkits] == [
        ("11.8", "nvidia/cuda:11.8.0-devel-ubuntu22.04", 11), ("12.4", "example.com/cuda:12.4", 13)]
    assert matrix.variants["cu118"].toolkit_versions == ("11.8", "12.1")


def test_unknown_variant_lists_the_valid_ones() -> None:
    with pytest.raises(PudevError, match=r"unknown variant 'cu999': valid variants are cu118, cu121"):
        load_matrix(VARIANTS_FILE).get("cu999")


def test_broken_toml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "variants.toml"
    path.write_text("image = \n")
    assert "not valid TOML" in _error(path)
