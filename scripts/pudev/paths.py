"""Where the project's files live, found from the package itself (host side)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(os.environ.get("PUDEV_ROOT") or Path(__file__).resolve().parents[2])
VARIANTS_FILE = REPO_ROOT / "docker" / "variants.toml"
DOCKERFILE = REPO_ROOT / "docker" / "Dockerfile"
STANDINS_FILE = REPO_ROOT / "docker" / "standins" / "standins.toml"
REQUIREMENTS_DIR = REPO_ROOT / "requirements"


def state_dir() -> Path:
    """Per-user state (build locks, test-pass records), outside the repo."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    path = Path(base) / "pudev"
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_dir() -> Path:
    """Per-user cache (debootstrap root filesystems), outside the repo."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    path = Path(base) / "pudev"
    path.mkdir(parents=True, exist_ok=True)
    return path
