"""One judgement type for the in-image tools: ok, warn or fail, and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Level = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Verdict:
    level: Level
    message: str
