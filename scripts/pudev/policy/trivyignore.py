"""The vulnerability gate's reviewed exceptions (.trivyignore.yaml): every entry must
say why it is acceptable, what users must do meanwhile and until when; a vulnerability
exception names the exact packages it covers; an expired entry fails the gate again."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from pudev.paths import REPO_ROOT

IGNORE_FILE = REPO_ROOT / ".trivyignore.yaml"
SECTIONS = ("vulnerabilities", "misconfigurations", "secrets", "licenses")
# Reviews are at most this far apart: an exception cannot be parked for years.
LONGEST_EXPIRY = datetime.timedelta(days=366)
# pkg:TYPE/[NAMESPACE/]NAME@VERSION[?QUALIFIERS]: a version is required, so an upgrade drops the exception.
_PURL = re.compile(r"pkg:[a-z][a-z0-9.+-]*/[^@\s]+@[^@\s?#]+(\?[^\s#]*)?")


def problems(path: Path = IGNORE_FILE, *, today: datetime.date | None = None) -> list[str]:
    """One line per entry without an id, a reason (statement), a mitigation or a future expiry
    (expired_at) at most a year away, and per vulnerability not scoped to exact packages (purls)."""
    today = today or datetime.datetime.now(datetime.timezone.utc).date()
    data: dict[str, Any] = YAML(typ="safe").load(path.read_text()) or {}
    found = [f"unknown section '{key}'" for key in data if key not in SECTIONS]
    for section in SECTIONS:
        for index, entry in enumerate(data.get(section) or []):
            where = f"{section}[{index}] {entry.get('id', '?')}"
            if not entry.get("id"):
                found.append(f"{where}: no id")
            if not str(entry.get("statement") or "").strip():
                found.append(f"{where}: no statement saying why it is acceptable")
            if not str(entry.get("mitigation") or "").strip():
                found.append(f"{where}: no mitigation saying what users must do until it is fixed")
            found += _expiry_problems(where, entry.get("expired_at"), today)
            if section == "vulnerabilities":
                found += _scope_problems(where, entry.get("purls"))
    return found


def _expiry_problems(where: str, expiry: object, today: datetime.date) -> list[str]:
    if not isinstance(expiry, datetime.date):
        return [f"{where}: no expired_at date (YYYY-MM-DD); Trivy would ignore it forever"]
    if expiry <= today:
        return [f"{where}: expired on {expiry}; review it and set a new date, or drop it"]
    if expiry - today > LONGEST_EXPIRY:
        return [f"{where}: expired_at {expiry} is more than a year away; review it within a year"]
    return []


def _scope_problems(where: str, purls: object) -> list[str]:
    if not isinstance(purls, list) or not purls:
        return [f"{where}: no purls; name the exact packages it covers (pkg:pypi/NAME@VERSION), or it silences "
                "the finding in every package"]
    return [f"{where}: purl '{purl}' is not pkg:TYPE/NAME@VERSION" for purl in purls
            if not isinstance(purl, str) or not _PURL.fullmatch(purl)]
