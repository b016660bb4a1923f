"""Halves of the in-image suite that passed on this machine, by image id.

An image id is the digest of the image's config, which names every layer's content, so the
same id is the same image byte for byte, suite included. `pudev test` remembers each half
that passed; `pudev test REF --reuse-local-pass` then records that pass against a pulled
candidate with the same id instead of running the half again (a CI job that tested its
build and then pushed it, say). Only passes are kept: a failure is always run again.
The store is one small JSON file per image under $PUDEV_STATE_DIR (default
$XDG_STATE_HOME/pudev, else ~/.local/state/pudev); it holds no path, token or output."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

STATE_VARIABLE = "PUDEV_STATE_DIR"


@dataclass(frozen=True)
class LocalPass:
    image_id: str
    half: str
    counts: dict[str, int] = field(default_factory=dict)  # passed, failed, skipped
    tested_at: str = ""


def state_dir() -> Path:
    explicit = os.environ.get(STATE_VARIABLE, "").strip()
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".local" / "state") / "pudev"


def _file(image_id: str) -> Path:
    algorithm, _, hexdigest = image_id.partition(":")
    if algorithm != "sha256" or len(hexdigest) != 64 or not all(c in "0123456789abcdef" for c in hexdigest):
        raise ValueError(f"not an image id: {image_id!r}")
    return state_dir() / "passes" / f"{hexdigest}.json"


def _read(path: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}  # missing or damaged: nothing is known, so the suite runs
    return data if isinstance(data, dict) else {}


def remember(image_id: str, half: str, counts: dict[str, int]) -> None:
    path = _file(image_id)
    known = _read(path)
    entry = LocalPass(image_id, half, dict(counts), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    known[half] = asdict(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
    temporary.replace(path)  # a reader never sees half a file


def recall(image_id: str, half: str) -> LocalPass | None:
    entry = _read(_file(image_id)).get(half)
    if not isinstance(entry, dict) or entry.get("image_id") != image_id or entry.get("half") != half:
        return None
    counts = entry.get("counts")
    if not isinstance(counts, dict) or not counts.get("passed") or counts.get("failed") or counts.get("skipped"):
        return None  # the same rule as SuiteOutcome.half_passed: a pass ran tests and none failed or skipped
    return LocalPass(image_id, half, {str(k): int(v) for k, v in counts.items()}, str(entry.get("tested_at", "")))
