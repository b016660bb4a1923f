"""Files a mirror switch touches.

apt's sources and the system-wide pip, uv and conda files hold for every user id and
every fresh home (root switches them). Each user may override pip, uv and conda in
their own home without root. `none` falls back to the base image's own settings
without naming any upstream host."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pudev.mirror import apt, models

ORIGINALS_DIR = Path("/etc/pudev/mirror/original")
# Relative to the image root. pip's global file and uv's system config are read by every
# user; conda reads every *.yaml in its root environment's condarc.d, so the base's own
# .condarc (Miniforge's channel list, say) stays as it is and merges with this one.
SYSTEM_FILES = {"pip": "etc/pip.conf", "uv": "etc/uv/uv.toml", "conda": "opt/conda/condarc.d/pudev-mirror.yaml"}
# Relative to a home; each wins over the system-wide file of its tool.
USER_FILES = {"pip": ".config/pip/pip.conf", "uv": ".config/uv/uv.toml", "conda": ".condarc"}


@dataclass(frozen=True)
class MirrorFiles:
    root: Path  # "/" in the image; a temporary folder in tests
    home: Path

    @property
    def apt_list(self) -> Path:
        return self.root / "etc/apt/sources.list"

    @property
    def originals(self) -> Path:
        return self.root / ORIGINALS_DIR.relative_to("/")

    @property
    def conda_present(self) -> bool:
        return (self.root / "opt/conda/bin/conda").exists()

    @property
    def https_ok(self) -> bool:
        return apt.https_ok(self.root)

    def tools(self) -> list[str]:
        """The package tools whose settings a switch writes: pip and uv, and conda where it exists."""
        return ["pip", "uv", "conda"] if self.conda_present else ["pip", "uv"]

    def system_file(self, tool: str) -> Path:
        return self.root / SYSTEM_FILES[tool]

    def user_file(self, tool: str) -> Path:
        return self.home / USER_FILES[tool]

    def models_file(self, *, system: bool) -> Path:
        return self.root / models.SYSTEM_FILE if system else self.home / models.USER_FILE

    def apt_files(self) -> list[Path]:
        return apt.sources_files(self.root)
