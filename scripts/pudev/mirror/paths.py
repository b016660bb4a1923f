"""Files a mirror switch touches. apt's are system-wide (root); pip's and conda's
are per user, so a non-root user can switch them and `none` falls back to the
base image's own settings without naming any upstream host."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ORIGINALS_DIR = Path("/etc/pudev/mirror/original")


@dataclass(frozen=True)
class MirrorFiles:
    root: Path  # "/" in the image; a temporary folder in tests
    home: Path

    @property
    def apt_list(self) -> Path:
        return self.root / "etc/apt/sources.list"

    @property
    def apt_parts(self) -> Path:
        return self.root / "etc/apt/sources.list.d"

    @property
    def originals(self) -> Path:
        return self.root / ORIGINALS_DIR.relative_to("/")

    @property
    def pip_conf(self) -> Path:
        return self.home / ".config/pip/pip.conf"

    @property
    def condarc(self) -> Path:
        return self.home / ".condarc"

    @property
    def conda_present(self) -> bool:
        return (self.root / "opt/conda/bin/conda").exists()

    @property
    def https_ok(self) -> bool:
        """apt can only use HTTPS mirrors when the image trusts public CAs."""
        return (self.root / "etc/ssl/certs/ca-certificates.crt").exists()

    def apt_files(self) -> list[Path]:
        files = [self.apt_list] if self.apt_list.exists() else []
        if self.apt_parts.is_dir():
            files += sorted(p for p in self.apt_parts.iterdir() if p.suffix in (".list", ".sources"))
        return files
