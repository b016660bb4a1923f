"""The vulnerability gate's reviewed exceptions (.trivyignore.yaml): every entry must
say why it is acceptable and until when; an expired entry fails the gate again."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from pudev.paths import REPO_ROOT

IGNORE_FILE = REPO_ROOT / ".trivyignore.yaml"
SECTIONS = ("vulnerabilities", "misconfigurations", "secrets", "licenses")


def problems(path: Path = IGNORE_FILE, *, today: datetime.date | None = None) -> list[str]:
    """One line per entry that has no id, no reason (statement) or no future expiry (expired_at)."""
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
            expiry = entry.get("expired_at")
            if not isinstance(expiry, datetime.date):
                found.append(f"{where}: no expired_at date (YYYY-MM-DD); Trivy would ignore it forever")
            elif expiry <= today:
                found.append(f"{where}: expired on {expiry}; review it and set a new date, or drop it")
    return found
