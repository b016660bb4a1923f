"""`pudev manifest --diff A B`: what changed between two images' build manifests:
packages added, removed, up- or downgraded (pip, conda, dpkg), and the build's
inputs (base and toolkit digests, lock hashes, commit)."""

from __future__ import annotations

import re
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Change:
    """One name whose version differs: added (before ""), removed (after "") or moved."""

    name: str
    before: str
    after: str

    @property
    def kind(self) -> str:
        if not self.before:
            return "added"
        if not self.after:
            return "removed"
        return "up" if _ordered(self.before) < _ordered(self.after) else "down"


def _ordered(version: str) -> tuple[tuple[int, str], ...]:
    """Enough of a version's order to tell up from down: numbers as numbers, the rest as text."""
    return tuple((int(part), "") if part.isdigit() else (-1, part) for part in re.split(r"[.+~:-]", version))


def changes(before: dict[str, str], after: dict[str, str]) -> list[Change]:
    return [Change(name, before.get(name, ""), after.get(name, ""))
            for name in sorted(before.keys() | after.keys()) if before.get(name) != after.get(name)]


def package_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Change]]:
    """Per package manager (pip, conda, dpkg): what the second image holds otherwise."""
    return {section: found for section in SECTIONS
            if (found := changes(_versions(before, section), _versions(after, section)))}


def _lines(found: list[Change]) -> list[str]:
    marks = {"added": "+", "removed": "-", "up": "~", "down": "~"}
    return [f"  {marks[change.kind]} {change.name} " + (f"{change.before} -> {change.after}" if change.kind in
                                                      ("up", "down") else change.before or change.after)
            for change in found]


def file_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The file groups (pudev.image.inventory.census_group) whose files differ: added, removed, or changed
    with the change in files and bytes. Manifests from before the census compare as unchanged."""
    mine, theirs = before.get("files"), after.get("files")
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return []
    lines = []
    for group in sorted(set(mine) | set(theirs)):
        old, new = mine.get(group), theirs.get(group)
        if old is None:
            assert new is not None  # the group is in one of them
            lines.append(f"  + {group} ({new['files']} files, {new['bytes']} bytes)")
        elif new is None:
            lines.append(f"  - {group} ({old['files']} files, {old['bytes']} bytes)")
        elif old["digest"] != new["digest"]:
            lines.append(f"  ~ {group}: {new['files'] - old['files']:+d} files, {new['bytes'] - old['bytes']:+d} bytes")
    return lines


def diff_manifests(before: dict[str, Any], after: dict[str, Any]) -> str:
    lines = [f"{before.get('image', 'A')} -> {after.get('image', 'B')}"]
    changed = _lines(changes(_inputs(before), _inputs(after)))
    lines += ["build inputs:", *(changed or ["  (none changed)"])]
    for section, found in package_changes(before, after).items():
        lines += [f"{section} packages:", *_lines(found)]
    files = file_changes(before, after)
    if files:
        lines += ["files (name, size or link target):", *files]
    if len(lines) == 3 and lines[2] == "  (none changed)":
        lines.append("no package or file changed")
    return "\n".join(lines)
