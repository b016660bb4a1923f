"""Variant files the unit tests write for themselves, so no test depends on
today's docker/variants.toml: a small TOML writer and a synthetic matrix."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

WriteMatrix = Callable[..., Path]  # the matrix_file fixture: write(data=None, name=...) -> path


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(key)} = {_value(item)}" for key, item in value.items()) + " }"
    raise TypeError(value)


def to_toml(data: dict[str, Any]) -> str:
    """Top-level scalars, then [toolkits."X.Y"] and [variants.NAME] tables."""
    lines = [f"{key} = {_value(value)}" for key, value in data.items() if key not in ("toolkits", "variants")]
    for section in ("toolkits", "variants"):
        for name, table in data.get(section, {}).items():
            lines += ["", f"[{section}.{json.dumps(name)}]"]
            lines += [f"{key} = {_value(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


SYNTHETIC: dict[str, Any] = {
    "image": "example/dev-image",
    "default_variant": "cu130",
    "platforms": ["linux/amd64"],
    "mirror": "none",
    "python": "3.12",
    "cxx_standard": "c++20",
    "toolkits": {
        "12.9": {"image": "example.com/cuda:12.9-devel", "max_gcc": 14, "min_arch": "5.0", "max_arch": "12.0"},
        "13.0": {"image": "example.com/cuda:13.0-devel", "max_gcc": 15, "min_arch": "7.5", "max_arch": "12.1"},
    },
    "variants": {
        "cu129": {"torch": "3.1.0", "cuda": "12.9", "base_image": "example.com/torch:3.1.0-cuda12.9",
                  "toolkits": ["12.9", "13.0"], "cuda_arch_list": "8.0;9.0;12.0+PTX"},
        "cu130": {"torch": "3.1.0", "cuda": "13.0", "base_image": "example.com/torch:3.1.0-cuda13.0",
                  "toolkits": ["12.9", "13.0"],
                  "cuda_arch_list": {"12.9": "8.0;9.0+PTX", "13.0": "8.0;9.0;10.0;12.0+PTX"}},
    },
}


# A lock as `require_lock` accepts it: pins with hashes (its contents are never installed here).
HASHED_LOCK = f"example==1.0 --hash=sha256:{'0' * 64}\n"
SYNTHETIC_LOCK = "torch3.1.0-py3.12.txt"  # the lock both synthetic variants share


def synthetic() -> dict[str, Any]:
    return copy.deepcopy(SYNTHETIC)


def write_matrix(path: Path, data: dict[str, Any] | None = None) -> Path:
    path.write_text(to_toml(synthetic() if data is None else data))
    return path


def pin(reference: str) -> str:
    """`reference@sha256:...`, a digest made up from the reference itself."""
    return f"{reference}@sha256:{hashlib.sha256(reference.encode()).hexdigest()}"


def pinned(data: dict[str, Any] | None = None) -> dict[str, Any]:
    """The matrix with every base and toolkit image pinned by digest, as `pudev pin` leaves it."""
    data = copy.deepcopy(synthetic() if data is None else data)
    for toolkit in data["toolkits"].values():
        toolkit["image"] = pin(toolkit["image"])
    for variant in data["variants"].values():
        variant["base_image"] = pin(variant["base_image"])
    return data
