"""`pudev manifest --diff A B`: what changed between two images' build manifests:
packages added, removed, up- or downgraded (pip, conda, dpkg), and the build's
inputs (base and toolkit digests, lock hashes, commit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pudev.reports.manifest import read_manifest

SECTIONS = ("pip", "conda", "dpkg")


def load_manifest(item: str) -> dict[str, Any]:
    """A manifest JSON file written by `pudev manifest`, or an image to read one from."""
    path = Path(item)
    if path.is_file():
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    return read_manifest(item)


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
