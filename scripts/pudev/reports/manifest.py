"""`pudev manifest VARIANT`: a build manifest (Markdown + JSON) read from the
built image itself, the way jupyter/docker-stacks keeps one per image."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pudev.building.labels import OCI, PUDEV
from pudev.common.table import markdown_table
from pudev.engine import images
from pudev.engine.layers import layer_history


def read_manifest(image: str, *, build_hint: str = "pudev build VARIANT") -> dict[str, Any]:
    info = images.require_image(image, build_hint=build_hint)
    labels = images.labels_of(info)
    inventory = images.inventory(image, files=True)  # what `--diff` compares beyond the packages
    return {
        "image": image,
        "image_id": info["Id"],
        "size": info["Size"],
        "layers": layer_history(image),
        "base": {"name": labels.get(f"{OCI}.base.name", ""), "digest": labels.get(f"{OCI}.base.digest", ""),
                 "local_id": labels.get(f"{PUDEV}.base.id", "")},
        "revision": labels.get(f"{OCI}.revision", ""),
        "created": labels.get(f"{OCI}.created", ""),
        "labels": labels,
        **inventory,
    }


def _table(rows: list[tuple[str, str]], headers: tuple[str, str]) -> list[str]:
    return markdown_table(headers, rows).splitlines()  # a layer's shell pipes are escaped, not cell breaks


def render_markdown(manifest: dict[str, Any]) -> str:
    mb = 1024 * 1024
    lines = [f"# Build manifest: `{manifest['image']}`", "",
             f"- image id: `{manifest['image_id']}`", f"- size: {manifest['size'] / mb:.0f} MiB",
             f"- base: `{manifest['base']['name']}` digest `{manifest['base']['digest'] or 'none (local image)'}`",
             f"- git revision: `{manifest['revision']}` ({manifest['created']})",
             f"- torch {manifest['torch']}, CUDA {manifest['cuda']}, cuDNN {manifest['cudnn']}, "
             f"Python {manifest['python']}", "", "## CUDA toolkits", ""]
    lines += _table([(version, text) for version, text in manifest["nvcc"].items()], ("toolkit", "nvcc --version"))
    lines += ["", "## Layers", ""]
    lines += _table([(f"{layer['size'] / mb:.1f} MiB", f"`{layer['created_by'][:120]}`")
                     for layer in manifest["layers"]], ("size", "created by"))
    lines += ["", "## Python packages (pip list)", ""]
    lines += _table([(p["name"], p["version"]) for p in manifest["pip"]], ("package", "version"))
    if manifest.get("conda") is not None:
        lines += ["", "## Conda packages (conda list)", ""]
        lines += _table([(p["name"], p["version"]) for p in manifest["conda"]], ("package", "version"))
    lines += ["", "## Debian packages (dpkg -l)", ""]
    lines += _table([(p["name"], p["version"]) for p in manifest["dpkg"]], ("package", "version"))
    return "\n".join(lines) + "\n"


def write_manifest(image: str, out_dir: Path, stem: str, *, build_hint: str) -> tuple[Path, Path]:
    manifest = read_manifest(image, build_hint=build_hint)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    md_path.write_text(render_markdown(manifest))
    return json_path, md_path
