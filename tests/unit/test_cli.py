"""Bad input: one line naming the problem and the fix, a non-zero exit, no traceback."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from pudev import engine
from pudev.cli import main

FAKE_DOCKER = """#!/bin/sh
# A docker client whose daemon is down (what `docker` prints then).
case "$*" in
  "version --format {{.Client.Version}}") echo 20.10.24 ;;
  *) echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
     exit 1 ;;
esac
"""


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code != 0
    assert "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("pudev: error: ")
    return lines[0]


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "docker"
    path.write_text(FAKE_DOCKER)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PUDEV_DOCKER", str(path))
    engine.docker_cli.cache_clear()
    yield path
    engine.docker_cli.cache_clear()


def test_unknown_variant_lists_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(["plan", "cu999"], capsys)
    assert "unknown variant 'cu999': valid variants are cu118, cu121" in line


def test_invalid_override(capsys: pytest.CaptureFixture[str]) -> None:
    assert "invalid override 'torch'" in _fails(["plan", "cu121", "--set", "torch"], capsys)
    assert "field 'base_image'" in _fails(["plan", "cu121", "--base-image", "Not An Image"], capsys)


def test_missing_ca_bundle(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = _fails(["build", "cu121", "--ca-bundle", str(tmp_path / "corp.pem")], capsys)
    assert "corp.pem not found: pass an existing PEM file to --ca-bundle" in line


def test_unreachable_daemon_says_how_to_start_one(capsys: pytest.CaptureFixture[str], fake_docker: Path) -> None:
    line = _fails(["build", "cu121", "--no-ca-bundle"], capsys)
    assert "cannot reach the Docker daemon" in line and "systemctl start docker" in line


def test_missing_docker_client(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                               tmp_path: Path) -> None:
    monkeypatch.setenv("PUDEV_DOCKER", str(tmp_path / "no-such-docker"))
    engine.docker_cli.cache_clear()
    try:
        assert "is not an executable docker client" in _fails(["test", "cu121"], capsys)
    finally:
        engine.docker_cli.cache_clear()


def test_variant_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert "name a variant: cu118, cu121 (or `all`)" in _fails(["build", "--no-ca-bundle"], capsys)


def test_variants_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["variants"]) == 0
    out = capsys.readouterr().out
    assert "cu121 (latest)" in out and "pytorch/pytorch:2.5.1-cuda11.8-cudnn9-runtime" in out


def test_plan_prints_the_official_bases(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "cu118", "--no-ca-bundle"]) == 0
    out = capsys.readouterr().out
    assert "--build-arg BASE_IMAGE=pytorch/pytorch:2.5.1-cuda11.8-cudnn9-runtime" in out
    assert "--build-arg TOOLKIT_B_IMAGE=nvidia/cuda:12.1.1-devel-ubuntu22.04" in out


def test_pull_mirror_rewrites_base_and_toolkit_images(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "cu121", "--no-ca-bundle", "--pull-mirror", "registry.example.cn/hub"]) == 0
    out = capsys.readouterr().out
    assert "BASE_IMAGE=registry.example.cn/hub/pytorch/pytorch:2.5.1-cuda12.1-cudnn9-runtime" in out
    assert "TOOLKIT_A_IMAGE=registry.example.cn/hub/nvidia/cuda:11.8.0-devel-ubuntu22.04" in out


def test_pull_mirror_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert "invalid --pull-mirror 'not a host'" in _fails(["plan", "cu121", "--pull-mirror", "not a host"], capsys)
    line = _fails(["plan", "cu121", "--base-image", "ghcr.io/o/torch:1", "--pull-mirror", "mirror.example.cn"], capsys)
    assert "only mirrors Docker Hub images; ghcr.io/o/torch:1 comes from ghcr.io" in line
