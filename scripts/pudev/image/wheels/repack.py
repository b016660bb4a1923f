"""Mark a freshly built wheel with what it was built against:
  - its version gets the local label (2.6.3 -> 2.6.3+pt241cu121): a wheelhouse shared by images
    keeps one file per torch, and pip prefers it to the same release's sdist;
  - its metadata requires exactly this torch (Requires-Dist: torch==X): under the image's torch
    constraints pip and uv will not install it beside another torch, and pass it over for a
    wheel or sdist that fits;
  - its .dist-info holds MARKER_FILE, which pip's start-up guard and `pudev verify` read.
The RECORD is written again with the new hashes (the wheel format checks them on install)."""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from pathlib import Path

from pudev.image.wheels.marker import MARKER_FILE, BuiltAgainst, dist_info_dir, to_json

# NAME-VERSION(-BUILD)?-PY-ABI-PLATFORM.whl
_FILENAME = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?P<rest>(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl)$")


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def has_compiled_code(wheel: Path) -> bool:
    with zipfile.ZipFile(wheel) as archive:
        return any(name.endswith(".so") or ".so." in name for name in archive.namelist())


def _metadata(text: str, version: str, torch: str) -> str:
    head, separator, body = text.partition("\n\n")
    lines = [line for line in head.splitlines() if not re.match(r"Requires-Dist:\s*torch(\s|$|[=<>!~;(\[])", line)]
    lines = [f"Version: {version}" if line.startswith("Version:") else line for line in lines]
    lines.append(f"Requires-Dist: torch=={torch}")
    return "\n".join(lines) + (separator + body if separator else "\n")


def mark(wheel: Path, against: BuiltAgainst, target_dir: Path) -> Path:
    """Write the marked copy of `wheel` into target_dir; returns its path."""
    match = _FILENAME.match(wheel.name)
    if match is None:
        raise ValueError(f"{wheel.name} is not a wheel file name (NAME-VERSION-PY-ABI-PLATFORM.whl)")
    version = match["version"]
    new_version = f"{version}.{against.label}" if "+" in version else f"{version}+{against.label}"
    with zipfile.ZipFile(wheel) as source:
        old_info = dist_info_dir(source.namelist())
        stem = old_info.removesuffix(".dist-info").rsplit("-", 1)[0]
        renames = {old_info: f"{stem}-{new_version}.dist-info",
                   old_info.replace(".dist-info", ".data"): f"{stem}-{new_version}.data"}
        new_info = renames[old_info]
        target = target_dir / f"{match['name']}-{new_version}{match['rest']}"
        partial = target.with_name(f".{target.name}.partial")
        records: list[str] = []
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as output:
            for item in source.infolist():
                top, _, rest = item.filename.partition("/")
                name = f"{renames.get(top, top)}/{rest}" if rest else item.filename
                if name in (f"{new_info}/RECORD", f"{new_info}/{MARKER_FILE}") or item.is_dir():
                    continue  # written anew below
                data = source.read(item)
                if name == f"{new_info}/METADATA":
                    data = _metadata(data.decode("utf-8"), new_version, against.torch).encode("utf-8")
                info = zipfile.ZipInfo(name, date_time=item.date_time)
                info.external_attr, info.compress_type = item.external_attr, zipfile.ZIP_DEFLATED
                output.writestr(info, data)
                records.append(f"{name},{_record_hash(data)},{len(data)}")
            marker = to_json(against).encode()
            output.writestr(f"{new_info}/{MARKER_FILE}", marker)
            records.append(f"{new_info}/{MARKER_FILE},{_record_hash(marker)},{len(marker)}")
            records.append(f"{new_info}/RECORD,,")
            output.writestr(f"{new_info}/RECORD", "\n".join(records) + "\n")
    partial.replace(target)
    return target
