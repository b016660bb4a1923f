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


def test_only_the_blobs_the_last_runs_manifests_name_are_kept(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    manifest = {"config": {"digest": "sha256:c0"}, "layers": [{"digest": "sha256:1a"}]}
    index = {"manifests": [{"digest": "sha256:f1"}]}
    for digest, body in (("f1", json.dumps(manifest)), ("f0", json.dumps(index)), ("c0", "{}"), ("1a", "layer"),
                         ("2b", "an old build's layer")):
        path = storage / f"{V2}/blobs/sha256/{digest[:2]}/{digest}/data"
        path.parent.mkdir(parents=True)
        path.write_text(body)
    for digest in ("f0", "f1"):
        _touch(storage, f"{V2}/repositories/org/app-candidates/_manifests/revisions/sha256/{digest}/link")
    for digest in ("1a", "2b"):
        _touch(storage, f"{V2}/repositories/org/app-candidates/_layers/sha256/{digest}/link")
    kept_between_runs.reset(storage)
    left = sorted(str(path.relative_to(storage / V2)) for path in storage.rglob("*") if path.is_file())
    assert left == ["blobs/sha256/1a/1a/data", "blobs/sha256/c0/c0/data", "blobs/sha256/f0/f0/data",
                    "blobs/sha256/f1/f1/data", "repositories/org/app-candidates/_layers/sha256/1a/link"]
    kept_between_runs.reset(storage)  # no manifest left to go by: nothing more is swept
    assert (storage / f"{V2}/blobs/sha256/1a/1a/data").exists()


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
