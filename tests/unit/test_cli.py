"""Bad input: one line naming the problem and the fix, a non-zero exit, no traceback."""

from __future__ import annotations

import contextlib
import shlex
import stat
import subprocess
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import fails as _fails
from matrices import WriteMatrix, pinned

from pudev.cli import main
from pudev.common.errors import PudevError
from pudev.config.loader import load_matrix
from pudev.config.selection import Selection, resolve
from pudev.engine import docker
from pudev.paths import VARIANTS_FILE

FAKE_DOCKER = """#!/bin/sh
# A docker client whose daemon is down (what `docker` prints then: `version` prints the client's part).
case "$*" in
  "version --format "*) echo '20.10.24|' ;;
esac
case "$*" in
  *) echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
     exit 1 ;;
esac
"""




@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "docker"
    path.write_text(FAKE_DOCKER)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PUDEV_DOCKER", str(path))
    docker.docker_cli.cache_clear()
    yield path
    docker.docker_cli.cache_clear()


def test_unknown_variant_lists_valid_ones(capsys: pytest.CaptureFixture[str], matrix_file: WriteMatrix) -> None:
    line = _fails(["plan", "cu999", "--variants-file", str(matrix_file())], capsys)
    assert "unknown variant 'cu999': valid variants are cu129, cu130" in line


def test_invalid_overrides_name_their_flag(capsys: pytest.CaptureFixture[str], matrix_file: WriteMatrix) -> None:
    path = str(matrix_file())
    assert "--set torch: invalid override, write KEY=VALUE" in _fails(["plan", "cu130", "--set", "torch",
                                                                      "--variants-file", path], capsys)
    line = _fails(["plan", "cu130", "--base-image", "Not An Image", "--variants-file", path], capsys)
    assert line.startswith("pudev: error: --base-image Not An Image: variant cu130: field 'base_image'")
    line = _fails(["plan", "cu130", "--mirror", "ustc", "--variants-file", path], capsys)
    assert line.startswith("pudev: error: --mirror ustc: variant cu130: field 'mirror'")


@pytest.mark.parametrize(("content", "expected"), [
    (None, "not found"), ("", "is empty"), ("-----BEGIN CERTIFICATE-----", "is a directory"),
    ("just text\n", "holds no PEM certificate"), (b"\xff\xfe", "is not UTF-8 text"),
])
def test_bad_ca_bundles(capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | bytes | None,
                        expected: str) -> None:
    bundle = tmp_path / "corp.pem"
    if expected == "is a directory":
        bundle.mkdir()
    elif isinstance(content, bytes):
        bundle.write_bytes(content)
    elif content is not None:
        bundle.write_text(content)
    line = _fails(["build", load_matrix(VARIANTS_FILE).default_variant, "--ca-bundle", str(bundle)], capsys)
    assert f"{bundle} (CA bundle, from --ca-bundle): {expected}" in line
    assert line.endswith("pass a PEM file of CA certificates to --ca-bundle")


def test_unreachable_daemon_says_how_to_start_one(capsys: pytest.CaptureFixture[str], fake_docker: Path) -> None:
    line = _fails(["build", "--profile", "local", "--no-ca-bundle"], capsys)
    assert "cannot reach the Docker daemon" in line and "systemctl start docker" in line


def test_missing_docker_client(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                               tmp_path: Path) -> None:
    monkeypatch.setenv("PUDEV_DOCKER", str(tmp_path / "no-such-docker"))
    docker.docker_cli.cache_clear()
    try:
        assert "is not an executable docker client" in _fails(["test", "--profile", "local"], capsys)
    finally:
        docker.docker_cli.cache_clear()


def test_variant_required(capsys: pytest.CaptureFixture[str], matrix_file: WriteMatrix) -> None:
    line = _fails(["build", "--no-ca-bundle", "--variants-file", str(matrix_file())], capsys)
    assert "name a variant: cu129, cu130 (or `all`)" in line


def test_planning_needs_no_docker(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                  tmp_path: Path, matrix_file: WriteMatrix, lock_folder: Path) -> None:
    """variants, plan, matrix and bake with no docker client on PATH and no daemon (bake, which needs
    every input's digest, of a matrix pinned by digest: it then asks no registry either)."""
    pinned_file = str(matrix_file(pinned()))
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no docker, no git
    monkeypatch.delenv("PUDEV_DOCKER", raising=False)
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    docker.docker_cli.cache_clear()
    try:
        for argv in (["variants"], ["matrix"], ["bake", "--out", "-", "--variants-file", pinned_file],
                     ["plan", "--profile", "local", "--no-ca-bundle"]):
            assert main(argv) == 0, argv
            assert capsys.readouterr().out.strip(), argv
    finally:
        docker.docker_cli.cache_clear()


def test_plan_shows_what_the_build_resolves_from_the_engine(capsys: pytest.CaptureFixture[str],
                                                            matrix_file: WriteMatrix, lock_folder: Path) -> None:
    """Pinned inputs are passed as pinned; the rest hold their place, named once, as resolved at build time."""
    data = pinned()
    data["toolkits"]["12.9"]["image"] = "example.com/cuda:12.9-devel"
    assert main(["plan", "cu130", "--no-ca-bundle", "--variants-file", str(matrix_file(data))]) == 0
    out = capsys.readouterr().out
    base_digest = data["variants"]["cu130"]["base_image"].split("@")[1]
    assert f'"base":{{"digest":"{base_digest}"' in out
    assert f"--label org.opencontainers.image.base.digest={base_digest}" in out
    assert '"toolkit 12.9":{"digest":"<TOOLKIT_A_DIGEST>"' in out  # the one the build resolves
    notes = [line for line in out.splitlines() if line.startswith("# ")]
    assert notes[1] == ("# resolved at build time: <BASE_ID> in label org.pudev.base.id; "
                        "<TOOLKIT_A_DIGEST> in IMAGE_RECORD")
    assert "example.com/cuda:12.9-devel" in notes[2] and "example.com/torch" in notes[2]


def test_plan_prints_the_variant_as_declared(capsys: pytest.CaptureFixture[str]) -> None:
    matrix = load_matrix(VARIANTS_FILE)
    variant = matrix.get(matrix.default_variant)
    assert main(["plan", variant.name, "--no-ca-bundle"]) == 0
    out = capsys.readouterr().out
    assert f"--build-arg BASE_IMAGE={variant.base_image}" in out
    assert f"--build-arg TOOLKIT_B_IMAGE={variant.toolkits[1].image}" in out


def test_pull_mirror_rewrites_base_and_toolkit_images(capsys: pytest.CaptureFixture[str]) -> None:
    """On a variant of the matrix: a profile's stand-in bases are not changed by flags (test_cli_every_flag)."""
    variant = next(v for v in resolve(Selection(names=("all",))).variants if len(v.toolkits) > 1)
    slot_b = variant.toolkits[1].version
    assert main(["plan", variant.name, "--no-ca-bundle", "--base-image", "pytorch/pytorch:1-cuda",
                 "--toolkit-image", f"{slot_b}=nvidia/cuda:devel", "--pull-mirror", "registry.example.cn/hub"]) == 0
    out = capsys.readouterr().out
    assert "BASE_IMAGE=registry.example.cn/hub/pytorch/pytorch:1-cuda" in out
    assert "TOOLKIT_B_IMAGE=registry.example.cn/hub/nvidia/cuda:devel" in out


def test_pull_mirror_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(["plan", "--profile", "local", "--pull-mirror", "not a host"], capsys)
    assert "--pull-mirror not a host: not a registry" in line
    line = _fails(["plan", "all", "--base-image", "ghcr.io/o/torch:1", "--pull-mirror",
                   "mirror.example.cn"], capsys)
    assert "only Docker Hub images are mirrored, and ghcr.io/o/torch:1 comes from ghcr.io" in line


def _engine_identity(reference: str) -> tuple[str, str]:
    """A made-up (digest, local id) for each image, as the engine has it once pulled."""
    return f"sha256:{sum(map(ord, reference)):064x}", f"sha256:{len(reference):064x}"


@pytest.mark.parametrize("on_engine", [True, False], ids=["images-on-the-engine", "images-pulled-by-the-build"])
def test_build_runs_the_command_plan_prints(on_engine: bool, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch, matrix_file: WriteMatrix,
                                            lock_folder: Path) -> None:
    """`pudev build` hands the engine the very arguments `pudev plan` prints: letter for letter when the
    images are on the engine, and once each fact the plan holds the place of is filled in when the build
    must pull them first."""
    from pudev.building import builder
    from pudev.engine import builds, images

    started: list[list[str]] = []
    pulled: set[str] = set()

    def popen(command: list[str], **_: object) -> None:
        started.append(command)
        raise PudevError("stopped before docker ran")

    def identity(ref: str, info: dict[str, object] | None = None) -> tuple[str, str]:
        return _engine_identity(ref) if on_engine or ref in pulled else ("", "")

    def ensure_local(ref: str, **_: object) -> dict[str, object]:
        pulled.add(ref)
        return {"Id": _engine_identity(ref)[1]}

    monkeypatch.setattr(images, "identity", identity)
    monkeypatch.setattr(docker, "require_daemon", lambda: None)
    monkeypatch.setattr(docker, "ensure_local", ensure_local)
    monkeypatch.setattr(docker, "inspect_images", dict.fromkeys)  # none on the engine: ensure_local asks
    monkeypatch.setattr(docker, "require_buildkit", lambda: "docker")
    monkeypatch.setattr(docker, "image_id", lambda _: None)
    monkeypatch.setattr(builder, "one_build_at_a_time", lambda _: contextlib.nullcontext())
    monkeypatch.setattr(builds, "subprocess", types.SimpleNamespace(
        Popen=popen, PIPE=subprocess.PIPE, STDOUT=subprocess.STDOUT, TimeoutExpired=subprocess.TimeoutExpired))
    path = matrix_file()
    variant = load_matrix(path).get("cu130")
    argv = ["cu130", "--no-ca-bundle", "--variants-file", str(path)]
    assert main(["plan", *argv]) == 0
    printed = capsys.readouterr().out.splitlines()
    notes = [line for line in printed if line.startswith("#")]
    planned = shlex.split("\n".join(line for line in printed if not line.startswith("#")).replace("\\\n", " "))
    assert main(["build", *argv]) == 2 and "stopped before docker ran" in capsys.readouterr().err
    (command,) = started
    # What the engine knows once it has each image, by the name the plan holds its place with.
    base, toolkit_a, toolkit_b = (_engine_identity(ref) for ref in (variant.base_image,
                                                                    *(t.image for t in variant.toolkits)))
    facts = {"<BASE_DIGEST>": base[0], "<BASE_ID>": base[1], "<TOOLKIT_A_DIGEST>": toolkit_a[0],
             "<TOOLKIT_B_DIGEST>": toolkit_b[0]}
    holes = {fact for fact in facts if any(fact in arg for arg in planned)}
    if on_engine:
        assert notes == ["# cu130: run from any directory"] and holes == set()
    else:
        assert holes == set(facts) and all(fact in notes[1] for fact in facts)  # each named in the one note
        assert pulled == {variant.base_image, *(t.image for t in variant.toolkits)}

    def filled(arg: str) -> str:
        for fact, value in facts.items():
            arg = arg.replace(fact, value)
        return arg

    # The build runs the plan as printed, its facts filled in, and adds nothing (the new id is asked after).
    assert [filled(arg) for arg in planned[2:]] == command[1:]  # after DOCKER_BUILDKIT=1 and the client
    assert f"org.pudev.base.id={base[1]}" in command
    assert any(f'"base":{{"digest":"{base[0]}"' in arg for arg in command)  # the record names the base as pulled
