"""Loading and checking variant files: written by the tests themselves, so they
hold for any matrix. Every error is one line naming where the bad value came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from matrices import WriteMatrix, synthetic

from pudev.common.errors import PudevError
from pudev.config.loader import load_matrix
from pudev.config.overrides import Override
from pudev.paths import VARIANTS_FILE


def _error(path: Path, overrides: dict[str, list[Override]] | None = None) -> str:
    with pytest.raises(PudevError) as caught:
        load_matrix(path, overrides)
    message = str(caught.value)
    assert "\n" not in message
    return message


def _with(change: Any) -> dict[str, Any]:
    data = synthetic()
    change(data)
    return data


def test_the_real_matrix_loads_and_every_variant_is_named_after_its_cuda() -> None:
    matrix = load_matrix(VARIANTS_FILE)
    assert matrix.default_variant in matrix.variants
    for name, variant in matrix.variants.items():
        assert name == variant.cuda_tag
        assert variant.default.provides == variant.cuda
        assert len(variant.toolkits) == 2


def test_a_synthetic_matrix_loads(matrix_file: WriteMatrix) -> None:
    matrix = load_matrix(matrix_file())
    cu130 = matrix.get("cu130")
    assert cu130.default_toolkit == "13.0" and cu130.python == "3.12" and cu130.cxx_standard == "c++20"
    assert [t.arch_list for t in cu130.toolkits] == ["8.0;9.0+PTX", "8.0;9.0;10.0;12.0+PTX"]
    assert [t.arch_list for t in matrix.get("cu129").toolkits] == ["8.0;9.0;12.0+PTX"] * 2
    assert cu130.build_mirror == cu130.mirror == "none"
    assert cu130.lock == matrix.get("cu129").lock == "torch3.1.0-py3.12"  # identical inputs share a lock


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d["variants"]["cu129"].update(torch_version="3"), "variant cu129: unknown field 'torch_version'"),
    (lambda d: d["variants"]["cu129"].pop("cuda"), "variant cu129: field 'cuda' is missing"),
    (lambda d: d["variants"]["cu129"].update(toolkits=["12.9", "12.4"]), "CUDA 12.4 has no toolkit entry"),
    (lambda d: d["variants"]["cu129"].update(base_image="Torch::x"), "field 'base_image'"),
    (lambda d: d["variants"]["cu129"].update(toolkits=["12.9", "12.9"]), "lists a toolkit twice"),
    (lambda d: d["variants"]["cu129"].update(python="3"), "field 'python': '3' is not a Python version"),
    (lambda d: d["variants"]["cu129"].update(cxx_standard="gnu++20"), "field 'cxx_standard'"),
    (lambda d: d["toolkits"]["12.9"].pop("max_arch"), "toolkit 12.9: field 'max_arch' is missing"),
    (lambda d: d.update(default_variant="cu999"), "'cu999' is not a declared variant"),
])
def test_bad_fields_name_the_file_and_the_field(matrix_file: WriteMatrix, change: Any, expected: str) -> None:
    path = matrix_file(_with(change))
    message = _error(path)
    assert message.startswith(f"{path} (variant file, from --variants-file): ")
    assert expected in message


def test_a_name_that_is_not_the_cuda_tag_is_refused_at_load(matrix_file: WriteMatrix) -> None:
    data = synthetic()
    data["variants"]["blackwell"] = data["variants"].pop("cu129")
    message = _error(matrix_file(data))
    assert "variant blackwell: the name must be cu129" in message and "rename [variants.blackwell]" in message


def test_cuda_that_no_toolkit_provides_is_refused(matrix_file: WriteMatrix) -> None:
    # The toolkits list is unchanged; only torch's CUDA moves to a release no slot holds.
    data = synthetic()
    data["variants"]["cu128"] = {**data["variants"].pop("cu129"), "cuda": "12.8"}
    message = _error(matrix_file(data))
    assert "variant cu128: field 'cuda': no toolkit provides torch's CUDA 12.8" in message


def test_a_declared_stand_in_provides_its_cuda(matrix_file: WriteMatrix) -> None:
    data = synthetic()
    data["toolkits"]["12.4"] = {"image": "x/cuda:12.4", "max_gcc": 13, "min_arch": "5.0", "max_arch": "9.0",
                                "stands_in_for": "12.9"}
    data["variants"]["cu129"].update(toolkits=["12.4", "13.0"], cuda_arch_list="8.0;9.0+PTX")
    variant = load_matrix(matrix_file(data)).get("cu129")
    assert variant.default_toolkit == "12.4"
    data["toolkits"]["12.4"]["stands_in_for"] = "11.8"
    assert "has another major version" in _error(matrix_file(data))


@pytest.mark.parametrize(("arch_list", "expected"), [
    ("8.0;10.0+PTX", "arch 10.0 cannot be compiled by CUDA 12.9 (its nvcc covers 5.0 to 9.0)"),
    ({"12.9": "8.0", "13.0": "7.0;8.0"}, "arch 7.0 cannot be compiled by CUDA 13.0 (its nvcc covers 7.5 to 12.1)"),
    ({"12.9": "8.0"}, "field 'cuda_arch_list' has no list for toolkit 13.0"),
    ("8.0,9.0", "is not a TORCH_CUDA_ARCH_LIST"),
])
def test_arch_lists_are_checked_against_each_toolkit(matrix_file: WriteMatrix, arch_list: Any,
                                                     expected: str) -> None:
    data = synthetic()
    data["toolkits"]["12.9"]["max_arch"] = "9.0"
    data["variants"]["cu129"]["cuda_arch_list"] = arch_list
    assert expected in _error(matrix_file(data))


@pytest.mark.parametrize(("override", "expected"), [
    (Override("torch", "3.1", "--set torch=3.1"), "--set torch=3.1: variant cu130: field 'torch'"),
    (Override("base_image", "Not An Image", "--base-image Not An Image"), "--base-image Not An Image: "),
    (Override("mirror", "ustc", "--mirror ustc"), "--mirror ustc: variant cu130: field 'mirror': 'ustc'"),
    (Override("cuda", "12.9", "--set cuda=12.9"), "--set cuda=12.9: variant cu130: the name must be cu129"),
    (Override("toolkit.13.0.max_gcc", "x", "--set toolkit.13.0.max_gcc=x"), "--set toolkit.13.0.max_gcc=x: "),
    (Override("cuda_arch_list", "7.0", "profile p (standins.toml)"), "profile p (standins.toml): "),
])
def test_an_error_an_override_causes_names_that_override(matrix_file: WriteMatrix, override: Override,
                                                         expected: str) -> None:
    path = matrix_file()
    message = _error(path, {"cu130": [override]})
    assert message.startswith(expected), message
    assert f"of {path})" in message  # and still says which matrix it applied to


def test_override_changes_one_variant_only(matrix_file: WriteMatrix) -> None:
    matrix = load_matrix(matrix_file(), {"cu130": [Override("toolkit.13.0.image", "x/y:z", "--toolkit-image")]})
    assert matrix.get("cu130").default.image == "x/y:z"
    assert matrix.get("cu129").toolkits[1].image == "example.com/cuda:13.0-devel"


def test_unknown_variant_lists_the_valid_ones(matrix_file: WriteMatrix) -> None:
    with pytest.raises(PudevError, match=r"unknown variant 'cu999': valid variants are cu129, cu130"):
        load_matrix(matrix_file()).get("cu999")


@pytest.mark.parametrize(("content", "expected"), [
    (None, "not found"),
    (b"", "is empty"),
    (b"image = \"\xff\xfe\"\n", "is not UTF-8 text"),
    (b"image = \n", "is not valid TOML"),
    ("dir", "is a directory, not a file"),
])
def test_unusable_variant_files(tmp_path: Path, content: bytes | str | None, expected: str) -> None:
    path = tmp_path / "variants.toml"
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    message = _error(path)
    assert message.startswith(f"{path} (variant file, from --variants-file): {expected}")
    assert message.endswith("pass the matrix file (docker/variants.toml) to --variants-file")


@pytest.mark.parametrize(("argv", "builds"), [(["variants"], 1), (["matrix"], 1),
                                               (["plan", "cu129", "--set", "mirror=tuna", "--no-ca-bundle"], 2)])
@pytest.mark.usefixtures("lock_folder")
def test_a_command_builds_the_matrix_once_as_declared(monkeypatch: pytest.MonkeyPatch, matrix_file: WriteMatrix,
                                                      capsys: pytest.CaptureFixture[str], argv: list[str],
                                                      builds: int) -> None:
    """Once as declared, and once more with the run's overrides where there are any."""
    from pudev.cli import main
    from pudev.config import loader

    real = loader._build
    calls: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(loader, "_build", counting)
    assert main([*argv, "--variants-file", str(matrix_file())]) == 0
    assert capsys.readouterr().out
    assert len(calls) == builds


def _ruled(*newer: str) -> dict[str, Any]:
    """The synthetic matrix under the newest-same-major rule: cu130 lists no toolkits, and the catalogue
    holds 13.x toolkits `newer` besides 12.9 and 13.0."""
    data = synthetic()
    data["second_toolkit"] = "newest-same-major"
    for version in newer:
        data["toolkits"][version] = {"image": f"example.com/cuda:{version}-devel", "max_gcc": 15,
                                     "min_arch": "7.5", "max_arch": "12.1"}
    data["variants"]["cu130"].pop("toolkits")
    data["variants"]["cu130"]["cuda_arch_list"] = "8.0;9.0;10.0;12.0+PTX"
    return data


def test_the_rule_gives_torchs_own_toolkit_and_the_newest_of_its_major(matrix_file: WriteMatrix) -> None:
    matrix = load_matrix(matrix_file(_ruled("13.5", "13.10", "13.2")))
    cu130 = matrix.get("cu130")
    assert cu130.toolkit_versions == ("13.0", "13.10")  # by release, not as text ("13.5" > "13.10")
    assert cu130.default_toolkit == "13.0"
    assert matrix.get("cu129").toolkit_versions == ("12.9", "13.0")  # a listed pair stays as listed


def test_where_torchs_own_is_the_newest_the_rule_takes_the_next_one(matrix_file: WriteMatrix) -> None:
    data = _ruled("12.8")
    data["variants"]["cu130"]["cuda"] = "13.0"
    data["toolkits"]["13.0"]["image"] = "example.com/cuda:13.0-devel"
    data["toolkits"]["12.9"]["max_arch"] = "12.1"
    data["toolkits"]["13.1"] = {**data["toolkits"]["13.0"], "image": "example.com/cuda:13.1-devel"}
    data["variants"]["cu131"] = {**data["variants"]["cu130"], "cuda": "13.1", "base_image": "example.com/t:13.1"}
    matrix = load_matrix(matrix_file(data))
    assert matrix.get("cu131").toolkit_versions == ("13.0", "13.1")  # the newest other 13.x, older than torch's
    assert matrix.get("cu131").default_toolkit == "13.1"


def test_the_rule_without_a_newer_toolkit_of_the_major_says_what_to_add(matrix_file: WriteMatrix) -> None:
    message = _error(matrix_file(_ruled()))
    assert "variant cu130" in message and "no other 13.x toolkit than torch's CUDA 13.0" in message
    assert "[toolkits]" in message


def test_without_the_rule_a_variant_must_list_its_toolkits(matrix_file: WriteMatrix) -> None:
    data = _ruled("13.5")
    data.pop("second_toolkit")
    message = _error(matrix_file(data))
    assert "variant cu130" in message and "second_toolkit rule is 'listed'" in message and "toolkits = [" in message
    data["second_toolkit"] = "newest"
    assert "field 'second_toolkit'" in _error(matrix_file(data))


def test_the_real_matrix_follows_its_own_rule() -> None:
    """Every variant that lists no toolkits holds torch's own and the newest of its major; the rule is the
    matrix's, so a toolkit added to the catalogue moves them (and the changelog says so)."""
    import tomllib

    raw = tomllib.loads(VARIANTS_FILE.read_text())
    matrix = load_matrix(VARIANTS_FILE)
    for name, table in raw["variants"].items():
        if "toolkits" in table:
            continue
        assert raw["second_toolkit"] == "newest-same-major"
        variant = matrix.get(name)
        major = variant.cuda.split(".")[0]
        others = [v for v in raw["toolkits"] if v.split(".")[0] == major and v != variant.cuda]
        newest = max(others, key=lambda v: tuple(int(p) for p in v.split(".")))
        assert set(variant.toolkit_versions) == {variant.cuda, newest}
