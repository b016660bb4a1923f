"""Layer waste detection on recorded layer listings, and `docker save`'s output read as each store writes it
(the e2e tests read real images)."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from pudev.common.errors import PudevError
from pudev.engine.layers import Layer, _read_layer, find_waste, read_layers, walk_save


def _layer(index: int, files: dict[str, int] | None = None, deleted: list[str] | None = None,
           opaque: list[str] | None = None) -> Layer:
    return Layer(index, files or {}, deleted or [], opaque or [])


def test_deleted_overwritten_and_hidden_files_are_waste() -> None:
    layers = [
        _layer(0, {"/base/big": 5_000_000}),
        _layer(1, {"/tmp/wheel.whl": 3_000_000, "/opt/lib.so": 2_000_000, "/cache/x/y": 4_000_000, "/ok": 9_000_000}),
        _layer(2, {"/opt/lib.so": 2_100_000}, deleted=["/tmp/wheel.whl", "/base/big"]),
        _layer(3, opaque=["/cache"]),
    ]
    waste = find_waste(layers, first=1, threshold=1_000_000)
    assert [(w.path, w.how, w.added_in, w.undone_in) for w in waste] == [
        ("/cache/x/y", "deleted", 1, 3), ("/tmp/wheel.whl", "deleted", 1, 2), ("/opt/lib.so", "overwritten", 1, 2)]


def test_small_files_and_base_layers_are_ignored() -> None:
    layers = [_layer(0, {"/a": 5_000_000}), _layer(1, {"/b": 10}), _layer(2, deleted=["/a", "/b"])]
    assert find_waste(layers, first=1, threshold=1_000_000) == []


def _tar(*members: tuple[str, int, bytes | None]) -> tarfile.TarFile:
    """An in-memory layer tar: (name, mode, data), data None for a directory."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, mode, data in members:
            info = tarfile.TarInfo(name)
            info.mode = mode
            if data is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return tarfile.open(fileobj=buffer, mode="r")


@pytest.mark.parametrize("root", [".", "./", "/"])
def test_the_root_entry_mode_is_read_however_the_tar_names_it(root: str) -> None:
    layer = _read_layer(0, _tar((root, 0o700, None), ("./etc/", 0o755, None), ("./etc/x", 0o644, b"xy")))
    assert layer.root_mode == 0o700
    assert layer.files == {"/etc/x": 2}


def test_a_layer_without_a_root_entry_has_no_root_mode() -> None:
    assert _read_layer(0, _tar(("etc/x", 0o644, b"x"))).root_mode is None


def test_top_level_dot_names_keep_their_dot() -> None:
    layer = _read_layer(0, _tar(("./.wh.opt", 0o644, b""), ("./.bashrc", 0o644, b"abc"),
                                ("./a/.wh..wh..opq", 0o644, b"")))
    assert layer.deleted == ["/opt"]
    assert layer.files == {"/.bashrc": 3}
    assert layer.opaque == ["/a"]


def _save(path: Path, blobs: dict[str, bytes], layers: list[str]) -> None:
    """A `docker save` archive as Docker 25+ writes it: blobs, and manifest.json last."""
    with tarfile.open(path, "w") as archive:
        for name, data in [*blobs.items(), ("manifest.json", json.dumps([{"Layers": layers}]).encode())]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def _layer_bytes(*entries: tuple[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The archive a fake `docker save` prints."""
    archive = tmp_path / "save.tar"
    client = tmp_path / "docker"
    client.write_text(f"#!/bin/sh\ncat {archive}\n")
    client.chmod(0o755)
    monkeypatch.setenv("PUDEV_DOCKER", str(client))
    return archive


def test_a_save_is_read_with_gzipped_and_plain_layers_beside_json(saved: Path) -> None:
    """The containerd store saves a built layer gzipped (here in two gzip members, as eStargz writes them),
    overlay2 as a plain tar; configs and indexes are JSON; a blob listed twice is listed at each place."""
    zipped = _layer_bytes(("etc/a", b"abc"), ("usr/.wh.doc", b""))
    _save(saved, {"blobs/sha256/config": b'{"config": {}}',
                  "blobs/sha256/zipped": gzip.compress(zipped[:512]) + gzip.compress(zipped[512:]),
                  "blobs/sha256/plain": _layer_bytes(("etc/b", b"b")),
                  "blobs/sha256/empty": b""},
          ["blobs/sha256/zipped", "blobs/sha256/plain", "blobs/sha256/empty", "blobs/sha256/plain"])
    layers = read_layers("probe")
    assert [(layer.index, layer.files, layer.deleted) for layer in layers] == [
        (0, {"/etc/a": 3}, ["/usr/doc"]), (1, {"/etc/b": 1}, []), (2, {}, []), (3, {"/etc/b": 1}, [])]


def test_the_walk_hands_every_other_file_on(saved: Path) -> None:
    """The config and manifest.json too: a secret in a label or the history is in them."""
    _save(saved, {"blobs/sha256/config": b'{"config": {"Labels": {"x": "y"}}}',
                  "blobs/sha256/plain": _layer_bytes(("etc/b", b"b"))}, ["blobs/sha256/plain"])
    others: dict[str, bytes] = {}
    layers: list[str] = []
    walk_save("probe", lambda name, _: layers.append(name), lambda name, handle: others.update({name: handle.read()}))
    assert layers == ["blobs/sha256/plain"]
    assert set(others) == {"blobs/sha256/config", "manifest.json"} and b'"Labels"' in others["blobs/sha256/config"]


def test_a_zstd_layer_is_refused_in_one_line(saved: Path) -> None:
    _save(saved, {"blobs/sha256/zstd": b"\x28\xb5\x2f\xfd" + b"\0" * 64}, ["blobs/sha256/zstd"])
    with pytest.raises(PudevError) as raised:
        read_layers("probe")
    assert "zstd" in str(raised.value) and "\n" not in str(raised.value)


def test_a_save_cut_short_is_one_line(saved: Path) -> None:
    saved.write_bytes(b"")
    with pytest.raises(PudevError) as raised:
        read_layers("probe")
    assert "docker save probe" in str(raised.value) and "not an image archive" in str(raised.value)
