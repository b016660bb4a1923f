"""Several images inspected in one call of the client (each call costs its start), and one call per image
once one is missing: the engine's answer then leaves it out and no longer lines up with the names."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from pudev.engine import docker

# A client that knows `base` and `toolkit`, answers as docker 20.10 does (the found ones on stdout, an
# error and exit 1 for a missing one), and logs each call.
FAKE = """#!/bin/sh
echo "$*" >> "{calls}"
[ "$1 $2" = "image inspect" ] || exit 99
shift 2
status=0
printf '['
separator=''
for name in "$@"; do
  case "$name" in
    base|toolkit) printf '%s{{"Id": "sha256:%s"}}' "$separator" "$name"; separator=', ' ;;
    *) echo "Error: No such image: $name" >&2; status=1 ;;
  esac
done
echo ']'
exit $status
"""


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "calls"
    fake = tmp_path / "docker"
    fake.write_text(FAKE.format(calls=log))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PUDEV_DOCKER", str(fake))
    docker.docker_cli.cache_clear()
    return log


def test_images_the_engine_has_are_inspected_in_one_call(calls: Path) -> None:
    assert docker.inspect_images(["toolkit", "base"]) == {"toolkit": {"Id": "sha256:toolkit"},
                                                          "base": {"Id": "sha256:base"}}
    assert calls.read_text().splitlines() == ["image inspect toolkit base"]


def test_a_missing_image_is_none_and_the_others_keep_their_own_answers(calls: Path) -> None:
    assert docker.inspect_images(["base", "missing", "toolkit"]) == {
        "base": {"Id": "sha256:base"}, "missing": None, "toolkit": {"Id": "sha256:toolkit"}}
    assert calls.read_text().splitlines() == ["image inspect base missing toolkit", "image inspect base",
                                              "image inspect missing", "image inspect toolkit"]


def test_no_images_no_call(calls: Path) -> None:
    assert docker.inspect_images([]) == {}
    assert not calls.exists()
