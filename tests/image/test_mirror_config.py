"""Mirror files baked in at build time, and a switch-and-back as the default user."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pudev.image.record import ImageRecord
from pudev.mirror.catalogue import MIRRORS
from pudev.mirror.paths import MirrorFiles


def _pudev_mirror(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["pudev", "mirror", *args], capture_output=True, text=True, timeout=60, check=False)


def _files() -> MirrorFiles:
    return MirrorFiles(root=Path("/"), home=Path.home())


def test_baked_in_files_match_the_build_argument(record: ImageRecord) -> None:
    files = _files()
    assert files.originals.is_dir(), "the base's apt sources must be kept for `pudev mirror none`"
    pip_conf = files.pip_conf.read_text() if files.pip_conf.exists() else ""
    apt = "".join(path.read_text() for path in files.apt_files())
    if record.mirror == "none":
        assert not files.pip_conf.exists()
        return
    mirror = MIRRORS[record.mirror]
    assert f"index-url = {mirror.pypi_index}" in pip_conf
    assert mirror.apt_base.split("://")[1] in apt
    if files.conda_present:
        assert mirror.conda_base in files.condarc.read_text()
    show = _pudev_mirror("--show")
    assert show.stdout.startswith(f"apt: {record.mirror}  pip: {record.mirror}"), show.stdout


def test_switch_and_back_as_the_default_user(record: ImageRecord) -> None:
    files = _files()
    before = files.pip_conf.read_text() if files.pip_conf.exists() else None
    other = "tuna" if record.mirror != "tuna" else "aliyun"
    try:
        switched = _pudev_mirror(other)
        assert switched.returncode == 0, switched.stderr
        assert "apt sources unchanged: they need root" in switched.stdout
        assert f"pip: {other}" in switched.stdout
        pip_config = subprocess.run(["pip", "config", "get", "global.index-url"], capture_output=True, text=True,
                                    check=True).stdout.strip()
        assert pip_config == MIRRORS[other].pypi_index
        none = _pudev_mirror("none")
        assert none.returncode == 0 and "pip: none" in none.stdout
        assert not files.pip_conf.exists()
    finally:
        _pudev_mirror(record.mirror)
    after = files.pip_conf.read_text() if files.pip_conf.exists() else None
    assert after == before


def test_apt_switch_needs_root_and_says_so() -> None:
    assert os.getuid() != 0
    result = _pudev_mirror("tuna")
    try:
        assert "need root" in result.stdout
    finally:
        _pudev_mirror("--show")
