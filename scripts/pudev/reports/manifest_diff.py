"""`pudev manifest --diff A B`: what changed between two images' build manifests:
packages added, removed, up- or downgraded (pip, conda, dpkg), and the build's
inputs (base and toolkit digests, lock hashes, commit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pudev.common.imageref import parse_image_ref
from pudev.common.inputs import InputFile
from pudev.reports.manifest import read_manifest

SECTIONS = ("pip", "conda", "dpkg")


FIX = "give a JSON file that `pudev manifest VARIANT` wrote (manifests/VARIANT.json), a variant or an image"
REQUIRED = ("image", "pip", "dpkg")  # what every manifest has (conda only on conda bases)


def _is_file_argument(item: str) -> bool:
    """A path, not an image: it exists, names JSON, or cannot be an image reference anyway."""
    return Path(item).exists() or item.endswith(".json") or parse_image_ref(item) is None


def load_manifest(item: str, *, position: str, build_hint: str) -> dict[str, Any]:
    """A manifest JSON file written by `pudev manifest`, or an image to read one from.
    `position` (A or B) names the argument in errors."""
    if not _is_file_argument(item):
        return read_manifest(item, build_hint=build_hint)
    source = InputFile(Path(item), "manifest", f"--diff {position}", FIX)
    data = source.read_json()
    if not isinstance(data, dict) or not all(key in data for key in REQUIRED) \
            or not all(isinstance(data[key], list) for key in REQUIRED[1:]):
        raise source.fail(f"is JSON but not a pudev manifest (it lacks {', '.join(REQUIRED)})")
    return data


def _versions(manifest: dict[str, Any], section: str) -> dict[str, str]:
    return {entry["name"].lower(): entry["version"] for entry in manifest.get(section) or []}


def _inputs(manifest: dict[str, Any]) -> dict[str, str]:
    record = manifest.get("record") or {}
    found = {name: f"{value.get('source', '')}@{value.get('digest', '')}"
             for name, value in (record.get("inputs") or {}).items()}
    found["revision"] = record.get("revision") or manifest.get("revision", "")
    found["base (label)"] = (manifest.get("base") or {}).get("digest", "")
    return found


def _changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    lines = []
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if old is None:
            lines.append(f"  + {name} {new}")
        elif new is None:
            lines.append(f"  - {name} {old}")
        else:
            lines.append(f"  ~ {name} {old} -> {new}")
    return lines


def diff_manifests(before: dict[str, Any], after: dict[str, Any]) -> str:
    lines = [f"{before.get('image', 'A')} -> {after.get('image', 'B')}"]
    changed = _changes(_inputs(before), _inputs(after))
    lines += ["build inputs:", *(changed or ["  (none changed)"])]
    for section in SECTIONS:
        changes = _changes(_versions(before, section), _versions(after, section))
        if changes:
            lines += [f"{section} packages:", *changes]
    if len(lines) == 3 and lines[2] == "  (none changed)":
        lines.append("no package changed")
    return "\n".join(lines)
