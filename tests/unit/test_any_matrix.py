"""A further variant is one entry in the variant file: `variants`, `matrix` and
`bake` take a copy of today's docker/variants.toml with a synthetic variant added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_digests import FakeRegistry
from matrices import HASHED_LOCK

from pudev.cli import main
from pudev.common.inputs import InputFile
from pudev.paths import VARIANTS_FILE

EXTRA = """
[toolkits."99.9"]
image = "example.com/cuda:99.9-devel"
max_gcc = 20
min_arch = "8.0"
max_arch = "20.0"

[variants.cu999]
torch = "9.9.9"
cuda = "99.9"
python = "3.13"
cxx_standard = "c++20"
base_image = "example.com/pytorch:9.9.9-cuda99.9"
toolkits = ["99.9", "{other}"]
cuda_arch_list = {{ "99.9" = "8.0;12.0+PTX", "{other}" = "{other_arch}" }}
"""


@pytest.fixture
def extended(tmp_path: Path) -> Path:
    raw = InputFile(VARIANTS_FILE, "variant file", "test", "").read_toml()
    other, entry = next(iter(raw["toolkits"].items()))
    path = tmp_path / "variants.toml"
    path.write_text(VARIANTS_FILE.read_text() + EXTRA.format(other=other, other_arch=entry["max_arch"]))
    return path


def test_variants_and_matrix_take_a_further_variant(extended: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["variants", "--variants-file", str(extended)]) == 0
    assert "cu999" in capsys.readouterr().out
    assert main(["matrix", "--variants-file", str(extended)]) == 0
    include = json.loads(capsys.readouterr().out)["include"]
    assert [entry["torch"] for entry in include if entry["variant"] == "cu999"] == ["9.9.9"]


def test_bake_takes_a_further_variant_once_it_has_a_lock(extended: Path, lock_folder: Path, registry: FakeRegistry,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    bake = ["bake", "--out", "-", "--no-ca-bundle", "--variants-file", str(extended)]
    assert main(bake) == 2  # each target is a build's plan, and a plan needs the lock
    assert capsys.readouterr().err.strip().endswith("run `pudev lock cu999`")
    (lock_folder / "torch9.9.9-py3.13.txt").write_text(HASHED_LOCK)
    assert main(bake) == 0
    document = json.loads(capsys.readouterr().out)
    target = document["target"]["cu999"]
    assert target["args"]["BASE_IMAGE"] == "example.com/pytorch:9.9.9-cuda99.9"
    base = json.loads(target["args"]["IMAGE_RECORD"])["inputs"]["base"]
    assert base["digest"] == registry.digest_of("example.com/pytorch:9.9.9-cuda99.9")
    assert target["labels"]["org.pudev.variant"] == "cu999"
    assert "cu999" in document["group"]["default"]["targets"]


def test_plan_refuses_the_new_variant_until_it_has_a_lock(extended: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "cu999", "--no-ca-bundle", "--variants-file", str(extended)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("pudev: error: ") and "\n" not in error
    assert "torch9.9.9-py3.13.txt (lock, from variant cu999's lock 'torch9.9.9-py3.13'): not found" in error
    assert error.endswith("run `pudev lock cu999`")
