"""Inputs before work: push, test, promote and sbom check every argument first (the registry
target, a file to write, a reference by digest), then that the engine answers, and only then
look for the image, so each failure names its real cause: a bad --registry is not "no image",
and an engine that is down is not "build it first". No engine runs here: its checks are stand-ins
that record the order they were asked in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_support import fails
from matrices import WriteMatrix

from pudev.common.errors import PudevError
from pudev.engine import docker
from pudev.registry.client import RegistryClient
from pudev.release.targets import DigestRef, Target

DAEMON_DOWN = "cannot reach the Docker daemon (Cannot connect to the Docker daemon at unix:///var/run/docker.sock)"


class Engine:
    """What was asked of the engine, in order; `up` says whether its daemon answers, `labels` the image's."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.asked: list[str] = []
        self.up = True
        self.labels: dict[str, str] | None = None  # None: no such image
        monkeypatch.setattr(docker, "require_daemon", self.require_daemon)
        monkeypatch.setattr(docker, "inspect_image", self.inspect_image)
        monkeypatch.setattr(RegistryClient, "ping", self.ping)

    def require_daemon(self) -> None:
        self.asked.append("daemon")
        if not self.up:
            raise PudevError(f"{DAEMON_DOWN}: start it")

    def inspect_image(self, ref: str) -> dict[str, Any] | None:
        self.asked.append(f"image {ref}")
        return None if self.labels is None else {"Id": "sha256:" + "1" * 64, "Config": {"Labels": self.labels}}

    def ping(self, _client: RegistryClient) -> None:
        self.asked.append("registry")
        raise PudevError("registry stand-in: nothing is pushed here")


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Engine:
    return Engine(monkeypatch)


@pytest.mark.parametrize("registry", ["http://bad ref", "Bad Host//x", ""])
def test_push_checks_the_registry_argument_before_the_engine(capsys: pytest.CaptureFixture[str], engine: Engine,
                                                             matrix_file: WriteMatrix, registry: str) -> None:
    engine.up = False
    line = fails(["push", "cu130", "--variants-file", str(matrix_file()), "--registry", registry], capsys)
    assert f"--registry {registry}: not a registry" in line if registry else "--registry: an empty value" in line
    assert engine.asked == []


@pytest.mark.parametrize("where", ["missing/ref.txt", "a-file/ref.txt", "."])
def test_push_checks_the_ref_file_before_the_engine(capsys: pytest.CaptureFixture[str], engine: Engine,
                                                    matrix_file: WriteMatrix, tmp_path: Path, where: str) -> None:
    (tmp_path / "a-file").write_text("")
    engine.up = False
    line = fails(["push", "cu130", "--variants-file", str(matrix_file()), "--registry", "127.0.0.1:5000",
                  "--ref-file", str(tmp_path / where)], capsys)
    assert f"--ref-file {tmp_path / where}: " in line and ("no folder" in line or "a folder, not a file" in line)
    assert engine.asked == []


def test_push_with_the_engine_down_names_the_daemon_not_the_image(capsys: pytest.CaptureFixture[str],
                                                                  engine: Engine, matrix_file: WriteMatrix) -> None:
    engine.up = False
    line = fails(["push", "cu130", "--variants-file", str(matrix_file()), "--registry", "127.0.0.1:5000"], capsys)
    assert DAEMON_DOWN in line and "build it first" not in line
    assert engine.asked == ["daemon"]


def test_push_of_an_image_never_built_says_build_it_first_once_the_engine_answers(
        capsys: pytest.CaptureFixture[str], engine: Engine, matrix_file: WriteMatrix) -> None:
    line = fails(["push", "cu130", "--variants-file", str(matrix_file()), "--registry", "127.0.0.1:5000"], capsys)
    assert "no image example/dev-image:cu130 here: build it first (`pudev build cu130`)" in line
    assert engine.asked == ["daemon", "image example/dev-image:cu130"]


def test_push_of_an_image_without_release_labels_says_rebuild_it(capsys: pytest.CaptureFixture[str],
                                                                 engine: Engine, matrix_file: WriteMatrix) -> None:
    engine.labels = {"org.pudev.variant": "cu130"}  # what an older pudev gave it
    line = fails(["push", "cu130", "--variants-file", str(matrix_file()), "--registry", "127.0.0.1:5000"], capsys)
    assert ("example/dev-image:cu130 carries no org.pudev.image or org.pudev.required-tests or org.pudev.latest or "
            "org.pudev.platforms label: it was built by an older pudev") in line
    assert "rebuild it with this pudev (`pudev build cu130`)" in line
    assert "registry" not in engine.asked  # nothing was sent


def test_push_takes_the_repository_name_from_the_image(capsys: pytest.CaptureFixture[str], engine: Engine,
                                                       matrix_file: WriteMatrix, monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    from pudev.release import push as candidates

    pushed: list[tuple[str, str, str]] = []

    def push_candidate(local_tag: str, variant: str, target: Target) -> tuple[DigestRef, str]:
        pushed.append((local_tag, variant, target.candidates.repository))
        return DigestRef(target.candidates, "sha256:" + "2" * 64), "tag"

    monkeypatch.setattr(candidates, "push_candidate", push_candidate)
    engine.labels = {"org.pudev.variant": "cu130", "org.pudev.image": "elsewhere/renamed-image",
                     "org.pudev.required-tests": "cpu", "org.pudev.latest": "false",
                     "org.pudev.platforms": "linux/amd64"}
    from pudev.cli import main

    main(["push", "cu130", "--variants-file", str(matrix_file()), "--registry", "127.0.0.1:5000/org"])
    assert pushed == [("example/dev-image:cu130", "cu130", "org/renamed-image-candidates")]


@pytest.mark.parametrize(("argv", "expected"), [
    (["test", "127.0.0.1:5000/x-candidates:a-tag"], "not a reference by digest"),
    (["test", f"127.0.0.1:5000/x-candidates@sha256:{'0' * 64}", "--junit", "{tmp}/a-file/junit.xml"], "no folder"),
    (["sbom", "example/dev-image:cu130", "--push"], "pudev sbom example/dev-image:cu130: not a reference by digest"),
    (["sbom", "example/dev-image:cu130", "--out", "{tmp}/missing/sbom.json"], "no folder"),
    (["sbom", "example/dev-image:cu130", "--out", "{tmp}"], "a folder, not a file"),
    (["promote", "example/dev-image:cu130"], "pudev promote example/dev-image:cu130: not a reference by digest"),
])
def test_the_other_commands_check_their_arguments_before_the_engine(capsys: pytest.CaptureFixture[str],
                                                                    engine: Engine, tmp_path: Path,
                                                                    argv: list[str], expected: str) -> None:
    (tmp_path / "a-file").write_text("")
    engine.up = False
    line = fails([item.replace("{tmp}", str(tmp_path)) for item in argv], capsys)
    assert expected in line
    assert engine.asked == []


@pytest.mark.parametrize("argv", [["test", f"127.0.0.1:5000/x-candidates@sha256:{'0' * 64}"],
                                  ["sbom", "example/dev-image:cu130"]])
def test_the_engine_is_asked_before_the_image_or_its_registry(capsys: pytest.CaptureFixture[str], engine: Engine,
                                                              argv: list[str]) -> None:
    engine.up = False
    line = fails(argv, capsys)
    assert DAEMON_DOWN in line
    assert engine.asked == ["daemon"]


def test_testing_a_variant_checks_the_junit_path_before_the_engine(capsys: pytest.CaptureFixture[str],
                                                                   engine: Engine, matrix_file: WriteMatrix,
                                                                   tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    engine.up = False
    line = fails(["test", "cu130", "--variants-file", str(matrix_file()), "--junit",
                  str(tmp_path / "a-file" / "deeper" / "junit.xml")], capsys)
    assert f"--junit {tmp_path / 'a-file' / 'deeper' / 'junit.xml'}: no folder" in line
    assert engine.asked == []
    line = fails(["test", "cu130", "--variants-file", str(matrix_file()), "--junit",
                  str(tmp_path / "new" / "deeper" / "junit.xml")], capsys)  # folders pudev makes are fine
    assert DAEMON_DOWN in line and engine.asked == ["daemon"]
