"""kept_between_runs, engine-free: a registry tree that held images keeps its blobs and the candidate
repositories' layer links, and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import kept_between_runs
import overlay_layers
import pytest

from pudev.engine import docker
from pudev.engine.layers import Layer

V2 = "docker/registry/v2"


def _touch(root: Path, relative: str, size: int = 1) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def _tree(root: Path) -> None:
    for relative in (f"{V2}/blobs/sha256/ab/abcd/data",
                     f"{V2}/repositories/org/app-candidates/_layers/sha256/abcd/link",
                     f"{V2}/repositories/org/app-candidates/_manifests/tags/cu121/current/link",
                     f"{V2}/repositories/org/app-candidates/_uploads/u1/startedat",
                     f"{V2}/repositories/org/app/_layers/sha256/abcd/link",
                     f"{V2}/repositories/org/app/_manifests/revisions/sha256/ef/link"):
        _touch(root, relative)


def test_blobs_and_candidate_links_survive_and_nothing_else(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    _tree(storage)
    kept_between_runs.reset(storage)
    left = sorted(str(path.relative_to(storage)) for path in storage.rglob("*") if path.is_file())
    assert left == [f"{V2}/blobs/sha256/ab/abcd/data", f"{V2}/repositories/org/app-candidates/_layers/sha256/abcd/link"]


def _blob(storage: Path, digest: str, body: str) -> None:
    path = storage / f"{V2}/blobs/sha256/{digest[:2]}/{digest}/data"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)


def _pushed(storage: Path, manifest_digest: str, layers: list[str]) -> None:
    """A module's push: its layers, their candidate links, and a manifest naming them."""
    for layer in layers:
        _blob(storage, layer, "layer")
        _touch(storage, f"{V2}/repositories/org/app-candidates/_layers/sha256/{layer}/link")
    _blob(storage, manifest_digest, json.dumps({"config": {"digest": "sha256:c0"},
                                                "layers": [{"digest": f"sha256:{layer}"} for layer in layers]}))
    _touch(storage, f"{V2}/repositories/org/app-candidates/_manifests/revisions/sha256/{manifest_digest}/link")


def _blobs(storage: Path) -> list[str]:
    return sorted(path.parent.name for path in storage.glob(f"{V2}/blobs/sha256/*/*/data"))


def test_a_run_keeps_the_blobs_that_any_of_its_registries_named(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    _blob(storage, "c0", "{}")
    _blob(storage, "0d", "an old build's layer")
    # One run: two modules, each starting its registry from the kept storage and pushing.
    kept_between_runs.sweep(storage)
    _pushed(kept_between_runs.reset(storage), "f1", ["1a"])
    _pushed(kept_between_runs.reset(storage), "f2", ["2b"])
    assert "1a" in _blobs(storage)  # a later module of the same run never sweeps
    # The next run: what either module named stays; the old layer, its link and nothing else go.
    kept_between_runs.sweep(storage)
    assert _blobs(storage) == ["1a", "2b", "c0", "f1", "f2"]
    links = sorted(path.parent.name for path in storage.glob(f"{V2}/repositories/*/*/_layers/sha256/*/link"))
    assert links == ["1a", "2b"]
    # A run that pushed nothing leaves the storage as it is, for the next one too.
    kept_between_runs.reset(storage)
    kept_between_runs.sweep(storage)
    assert _blobs(storage) == ["1a", "2b", "c0", "f1", "f2"]
    # A run that pushed another build: the next run keeps that build's blobs alone.
    _pushed(kept_between_runs.reset(storage), "f3", ["3c"])
    kept_between_runs.sweep(storage)
    assert _blobs(storage) == ["3c", "c0", "f3"]


def test_an_unreadable_manifest_sweeps_nothing(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    _blob(storage, "0d", "an old build's layer")
    _touch(storage, f"{V2}/repositories/org/app-candidates/_manifests/revisions/sha256/ee/link")  # no blob
    kept_between_runs.reset(storage)
    _pushed(storage, "f1", ["1a"])
    kept_between_runs.sweep(storage)
    assert "0d" in _blobs(storage)
    kept_between_runs.sweep(storage)  # and in later runs, until a run's record is whole again
    assert "0d" in _blobs(storage)


def test_storage_over_the_limit_is_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = tmp_path / "storage"
    _tree(storage)
    monkeypatch.setattr(kept_between_runs, "LIMIT_BYTES", 3)
    assert kept_between_runs.reset(storage).is_dir()
    assert not any(storage.iterdir())


def test_the_folder_follows_the_cache_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUDEV_TEST_CACHE", str(tmp_path / "cache"))
    assert kept_between_runs.kept_storage_dir() == tmp_path / "cache" / "registry-storage"
    monkeypatch.delenv("PUDEV_TEST_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kept_between_runs.kept_storage_dir() == tmp_path / "xdg" / "pudev-tests" / "registry-storage"


def test_a_layer_listing_is_read_once_per_image_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUDEV_TEST_CACHE", str(tmp_path))
    reads: list[str] = []
    listing = [Layer(0, {"/a": 3}, ["/b"], ["/c"], 0o755)]

    def read(image: str) -> list[Layer]:
        reads.append(image)
        return listing

    monkeypatch.setattr(kept_between_runs, "read_layers", read)
    monkeypatch.setattr(overlay_layers, "read_layers", lambda image: None)  # not overlay2
    monkeypatch.setattr(docker, "image_id", lambda image: "sha256:" + "1" * 64)
    for _ in range(2):
        assert kept_between_runs.layers_by_id("img:tag", "sha256:" + "1" * 64) == listing
    assert reads == ["img:tag"]
    monkeypatch.setattr(docker, "image_id", lambda image: "sha256:" + "2" * 64)
    with pytest.raises(AssertionError, match="moved to another image"):
        kept_between_runs.layers_by_id("img:tag", "sha256:" + "3" * 64)
