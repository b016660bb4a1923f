"""Layer waste detection on recorded layer listings (the e2e test reads a real image)."""

from __future__ import annotations

from pudev.engine.layers import Layer, find_waste


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
