"""Inputs that used to slip through: each is one line naming the flag or file, the problem and a fix
that works, and a non-zero exit. Every matrix here is one the test writes (any matrix, not today's)."""

from __future__ import annotations

import copy
import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import fails as _fails
from fake_registry import fake_registry
from matrices import WriteMatrix, synthetic

from pudev.cli import main
from pudev.engine import docker
from pudev.registry.credentials import Credentials

# A docker client whose daemon answers but holds no image at all.
EMPTY_ENGINE = """#!/bin/sh
case "$*" in
  "version --format "*) echo '20.10.24|20.10.24' ;;
  "image inspect "*) echo "[]"; echo "Error: No such image: $3" >&2; exit 1 ;;
  *) echo "unexpected: docker $*" >&2; exit 99 ;;
esac
"""




@pytest.fixture
def empty_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    path = tmp_path / "docker"
    path.write_text(EMPTY_ENGINE)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PUDEV_DOCKER", str(path))
    docker.docker_cli.cache_clear()
    yield
    docker.docker_cli.cache_clear()


def _with_unused_toolkit() -> dict[str, Any]:
    """The synthetic matrix plus a catalogue toolkit no variant uses."""
    data = synthetic()
    data["toolkits"]["11.8"] = {"image": "example.com/cuda:11.8-devel", "max_gcc": 11, "min_arch": "3.5",
                                "max_arch": "9.0"}
    return data


def test_testing_an_image_never_built_says_build_it_first(capsys: pytest.CaptureFixture[str],
                                                          matrix_file: WriteMatrix, empty_engine: None) -> None:
    """Instead of `docker run` trying Docker Hub and failing with its multi-line error."""
    name = next(iter(synthetic()["variants"]))
    line = _fails(["test", name, "--variants-file", str(matrix_file())], capsys)
    assert f"no image example/dev-image:{name} here: build it first (`pudev build {name}`)" in line


def test_a_profile_build_is_advised_for_a_profile(capsys: pytest.CaptureFixture[str], empty_engine: None) -> None:
    line = _fails(["test", "--profile", "local"], capsys)
    assert line.endswith("build it first (`pudev build --profile local`)")


def test_a_python_the_base_does_not_ship_names_the_flag(capsys: pytest.CaptureFixture[str],
                                                        matrix_file: WriteMatrix) -> None:
    name, variant = next(iter(synthetic()["variants"].items()))
    line = _fails(["plan", name, "--variants-file", str(matrix_file()), "--set", "python=3.99", "--no-ca-bundle"],
                  capsys)
    assert line.startswith("pudev: error: --set python=3.99: the Python is the one the base image ships")
    assert f"{name}: Python {synthetic()['python']} from {variant['base_image']}" in line
    assert "--base-image" in line


def test_the_missing_lock_advice_repeats_the_flags(capsys: pytest.CaptureFixture[str], matrix_file: WriteMatrix,
                                                   lock_folder: Path) -> None:
    """The advised `pudev lock` would make exactly the lock this run looks for."""
    name = next(iter(synthetic()["variants"]))
    line = _fails(["plan", name, "--variants-file", str(matrix_file()), "--set", "python=3.99",
                   "--base-image", "example.com/py399:1", "--no-ca-bundle"], capsys)
    assert "-py3.99.txt (lock," in line
    assert line.endswith(f"run `pudev lock {name} --set python=3.99 --base-image example.com/py399:1`")


@pytest.mark.parametrize("flags", [["--toolkit-image", "11.8=example.com/other:1"],
                                   ["--set", "toolkit.11.8.max_gcc=99"]])
def test_a_toolkit_override_no_chosen_variant_uses_is_refused(capsys: pytest.CaptureFixture[str],
                                                              matrix_file: WriteMatrix, lock_folder: Path,
                                                              flags: list[str]) -> None:
    path = str(matrix_file(_with_unused_toolkit()))
    line = _fails(["plan", "all", "--variants-file", path, "--no-ca-bundle", *flags], capsys)
    assert line.startswith(f"pudev: error: {' '.join(flags)}: no chosen variant uses CUDA 11.8")
    assert "cu129 has 12.9, 13.0" in line and "--set toolkits=" in line


def test_a_toolkit_override_applies_where_some_chosen_variant_uses_it(capsys: pytest.CaptureFixture[str],
                                                                      matrix_file: WriteMatrix,
                                                                      lock_folder: Path) -> None:
    data = _with_unused_toolkit()
    data["variants"]["cu129"]["toolkits"] = ["11.8", "12.9"]
    data["variants"]["cu129"]["cuda_arch_list"] = "8.0;9.0+PTX"
    assert main(["plan", "all", "--variants-file", str(matrix_file(data)), "--no-ca-bundle",
                 "--toolkit-image", "11.8=example.com/other:1"]) == 0
    assert "example.com/other:1" in capsys.readouterr().out


def test_whole_matrix_commands_apply_overrides_to_every_variant(capsys: pytest.CaptureFixture[str],
                                                                matrix_file: WriteMatrix) -> None:
    """Instead of ignoring them: such a command names no variant, so its flags are for the whole matrix."""
    assert main(["matrix", "--variants-file", str(matrix_file()), "--base-image", "example.com/b:1"]) == 0
    entries = json.loads(capsys.readouterr().out)["include"]
    assert len(entries) == len(synthetic()["variants"])
    assert all(entry["base_image"] == "example.com/b:1" for entry in entries)


@pytest.mark.parametrize(("reference", "hint"), [
    ("Example.com/Org/Torch:2.5.1", "repository names must be lower case: Example.com/org/torch:2.5.1"),
    ("Pytorch/Pytorch:2.5.1-Cuda", "repository names must be lower case: pytorch/pytorch:2.5.1-Cuda"),
    ("https://example.com/org/torch:1", "drop the URL scheme"),
    ("example.com/org/torch :1", "it contains white space"),
])
def test_a_bad_image_reference_says_why(capsys: pytest.CaptureFixture[str], matrix_file: WriteMatrix,
                                        reference: str, hint: str) -> None:
    name = next(iter(synthetic()["variants"]))
    line = _fails(["plan", name, "--variants-file", str(matrix_file()), "--base-image", reference], capsys)
    assert f"--base-image {reference}:" in line and "is not a valid image reference" in line and hint in line


MANIFEST_FIX = "give a JSON file that `pudev manifest VARIANT` wrote"


@pytest.mark.parametrize(("content", "problem"), [
    (None, "not found"),
    (b"", "is empty"),
    (b"\xff\xfe garbage", "is not UTF-8 text (byte 0)"),
    (b"{not json", "is not valid JSON"),
    (b'{"a": 1}', "is JSON but not a pudev manifest (it lacks image, pip, dpkg)"),
    (b'{"image": "x", "pip": {}, "dpkg": []}', "is JSON but not a pudev manifest"),
    (b"[1, 2]", "is JSON but not a pudev manifest"),
])
def test_a_diff_input_that_is_no_manifest(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                          content: bytes | None, problem: str) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"image": "a", "pip": [], "dpkg": []}))
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_bytes(content)
    line = _fails(["manifest", "--diff", str(good), str(bad)], capsys)
    assert line.startswith(f"pudev: error: {bad} (manifest, from --diff B): {problem}")
    assert MANIFEST_FIX in line


def test_a_diff_input_that_is_a_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = _fails(["manifest", "--diff", str(tmp_path), str(tmp_path)], capsys)
    assert f"{tmp_path} (manifest, from --diff A): is a directory" in line


def test_two_manifests_diff(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    before: dict[str, Any] = {"image": "a", "pip": [{"name": "numpy", "version": "1.0"}], "dpkg": []}
    after = copy.deepcopy(before)
    after["pip"][0]["version"] = "2.0"
    paths = []
    for name, data in (("a.json", before), ("b.json", after)):
        (tmp_path / name).write_text(json.dumps(data))
        paths.append(str(tmp_path / name))
    assert main(["manifest", "--diff", *paths]) == 0
    assert "~ numpy 1.0 -> 2.0" in capsys.readouterr().out


def test_a_variant_in_a_diff_is_its_local_build(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                matrix_file: WriteMatrix, empty_engine: None) -> None:
    name = next(iter(synthetic()["variants"]))
    line = _fails(["manifest", "--variants-file", str(matrix_file()), "--diff", name, name], capsys)
    assert f"no image example/dev-image:{name} here: build it first (`pudev build {name}`)" in line


@pytest.fixture
def login(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with fake_registry() as (address, _):
        monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
        for name in ("PUDEV_REGISTRY_HOST", "PUDEV_REGISTRY_USERNAME", "PUDEV_REGISTRY_PASSWORD"):
            monkeypatch.delenv(name, raising=False)
        auth = Credentials("pusher", "s3cret", "").basic()
        (tmp_path / "config.json").write_text(json.dumps({"auths": {address: {"auth": auth}}}))
        yield address


@pytest.mark.parametrize("argv", [["promote"], ["sbom", "--fetch"], ["sbom", "--push"]])
def test_a_digest_the_registry_lacks_is_named_not_sent_on(capsys: pytest.CaptureFixture[str], login: str,
                                                          argv: list[str], lock_folder: Path) -> None:
    """Not "run `pudev test` first" or "`--push` attaches one": those would fail the same way."""
    missing = "sha256:" + "0" * 64
    reference = f"{login}/org/image-candidates@{missing}"
    line = _fails([*argv, reference], capsys)
    assert f"{login} has no image {missing} in org/image-candidates" in line
    assert "check the reference (what `pudev push` printed)" in line
    assert "pudev test" not in line and "attaches one" not in line


@pytest.mark.parametrize(("command", "has", "lacks"), [
    ("sbom", ["--fetch", "IMAGE"], ["--set", "--ca-bundle", "--profile", "VARIANT"]),
    ("promote", ["CANDIDATE", "REGISTRY/REPO-candidates@sha256:"], ["--ca-bundle", "--cache-from", "variant names"]),
    ("test", ["--cpu-only", "--profile"], ["--ca-bundle", "--cache-from", "--no-cache"]),
    ("push", ["--registry", "--profile"], ["--ca-bundle", "--no-cache"]),
    ("standins", ["--ca-bundle", "--profile"], ["--set", "--cache-from", "--variants-file"]),
    ("profiles", [], ["--set", "--profile", "--ca-bundle"]),
    ("pin", ["--variants-file"], ["--set", "--profile", "--ca-bundle"]),
    ("build", ["--set", "--ca-bundle", "--cache-from", "--no-cache"], []),
    ("bake", ["--set", "--ca-bundle", "--out"], []),
])
def test_each_help_shows_only_the_options_its_command_reads(capsys: pytest.CaptureFixture[str], command: str,
                                                            has: list[str], lacks: list[str]) -> None:
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert all(option in text for option in has), (command, has)
    assert not [option for option in lacks if option in text], (command, lacks)


def test_an_option_a_command_does_not_read_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A usage error in one line (exit 2) rather than a silently ignored flag."""
    assert main(["sbom", "x", "--ca-bundle", str(tmp_path / "bundle.pem")]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "unrecognized arguments: --ca-bundle" in error and "--help" in error


def test_a_platform_pudev_does_not_build_is_one_line_naming_the_ones_it_does(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "cu121", "--platform", "linux/s390x"]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and error.startswith("pudev: error: --platform linux/s390x")
    assert "cu121 is built for linux/amd64 only" in error and "''" not in error
    # No variant to name: the platforms pudev builds at all.
    assert main(["matrix", "--platform", "linux/s390x"]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "linux/amd64 and linux/arm64" in error

