"""kept_between_runs: the test cache's folder and the layer listings kept by image id (no engine)."""

from __future__ import annotations

from pathlib import Path

import kept_between_runs
import pytest

from pudev.engine import docker
from pudev.engine.layers import Layer


def test_the_folder_follows_the_cache_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUDEV_TEST_CACHE", str(tmp_path / "cache"))
    assert kept_between_runs.cache_dir() == tmp_path / "cache"
    monkeypatch.delenv("PUDEV_TEST_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kept_between_runs.cache_dir() == tmp_path / "xdg" / "pudev-tests"


def test_a_layer_listing_is_read_once_per_image_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUDEV_TEST_CACHE", str(tmp_path))
    reads: list[str] = []
    listing = [Layer(0, {"/a": 3}, ["/b"], ["/c"], 0o755)]

    def read(image: str) -> list[Layer]:
        reads.append(image)
        return listing

    monkeypatch.setattr(kept_between_runs, "read_layers", read)
    monkeypatch.setattr(docker, "image_id", lambda image: "sha256:" + "1" * 64)
    for _ in range(2):
        assert kept_between_runs.layers_by_id("img:tag", "sha256:" + "1" * 64) == listing
    assert reads == ["img:tag"]
    monkeypatch.setattr(docker, "image_id", lambda image: "sha256:" + "2" * 64)
    with pytest.raises(AssertionError, match="moved to another image"):
        kept_between_runs.layers_by_id("img:tag", "sha256:" + "3" * 64)
