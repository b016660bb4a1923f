"""The image a rebuild replaced: removed unless something still names it, and in the background
without keeping the caller (the engine takes seconds to delete a 5 GB image's files)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from pudev.engine import docker

UNTAGGED, TAGGED = "sha256:" + "a" * 64, "sha256:" + "b" * 64
# A docker client that knows two images; its `rmi` waits for a gate file before it removes anything,
# then writes the id it removed and its session id.
FAKE = """#!/bin/sh
case "$*" in
  "image inspect {untagged}") echo '[{{"Id": "{untagged}", "RepoTags": []}}]' ;;
  "image inspect {tagged}") echo '[{{"Id": "{tagged}", "RepoTags": ["example/dev-image:cu130"]}}]' ;;
  "image inspect --format {{{{len .RepoTags}}}} {untagged}") echo 0 ;;
  "image inspect --format {{{{len .RepoTags}}}} {tagged}") echo 1 ;;
  "image inspect "*) echo "Error: No such image: $3" >&2; exit 1 ;;
  "rmi "*)
    tries=0
    while [ ! -e "{gate}" ] && [ "$tries" -lt 300 ]; do sleep 0.1; tries=$((tries + 1)); done
    echo "$2 $(ps -o sid= -p $$)" >> "{removed}" ;;
  *) echo "unexpected: docker $*" >&2; exit 99 ;;
esac
"""


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The gate that lets the fake `rmi` go on, and the file it writes what it removed to."""
    gate, removed = tmp_path / "gate", tmp_path / "removed"
    fake = tmp_path / "docker"
    fake.write_text(FAKE.format(untagged=UNTAGGED, tagged=TAGGED, gate=gate, removed=removed))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PUDEV_DOCKER", str(fake))
    docker.docker_cli.cache_clear()
    return gate, removed


def _lines_when_written(path: Path) -> list[str]:
    deadline = time.monotonic() + 30
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return path.read_text().splitlines() if path.exists() else []


def test_the_background_removal_returns_before_the_engine_removes_anything(engine: tuple[Path, Path]) -> None:
    gate, removed = engine
    docker.drop_if_untagged(UNTAGGED, background=True)
    assert not removed.exists(), "the caller waited for the removal"
    gate.touch()
    (line,) = _lines_when_written(removed)
    image, session = line.split()
    assert image == UNTAGGED
    assert int(session) != os.getsid(0), "an interrupt at the caller's terminal would reach the removal"


def test_the_removal_waits_when_asked_to(engine: tuple[Path, Path]) -> None:
    gate, removed = engine
    gate.touch()
    docker.drop_if_untagged(UNTAGGED)
    assert removed.read_text().split()[0] == UNTAGGED


@pytest.mark.parametrize("background", [False, True])
def test_an_image_something_still_names_is_kept(engine: tuple[Path, Path], background: bool) -> None:
    gate, removed = engine
    gate.touch()
    docker.drop_if_untagged(TAGGED, background=background)
    docker.drop_if_untagged("sha256:" + "c" * 64, background=background)  # gone already: the engine knows none
    docker.drop_if_untagged(UNTAGGED, background=background)  # last: a removal started before it is done first
    _lines_when_written(removed)
    time.sleep(0.5)  # and one that is not yet has had time to write
    assert [line.split()[0] for line in removed.read_text().splitlines()] == [UNTAGGED]
