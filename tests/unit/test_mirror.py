"""Mirror rendering for each mirror and each apt format, and the switch round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from pudev.common.errors import PudevError
from pudev.mirror import switch
from pudev.mirror.apt import rewrite_deb822, rewrite_one_line
from pudev.mirror.catalogue import MIRRORS
from pudev.mirror.config import render_condarc, render_pip_conf
from pudev.mirror.paths import MirrorFiles

UBUNTU_2204 = """\
# See http://help.ubuntu.com/community/UpgradeNotes
deb http://archive.example.org/ubuntu/ jammy main restricted
deb http://archive.example.org/ubuntu/ jammy-updates main restricted
# deb-src http://archive.example.org/ubuntu/ jammy universe
deb [arch=amd64] http://archive.example.org/ubuntu/ jammy universe
deb http://security.example.org/ubuntu/ jammy-security main restricted
deb https://vendor.example.com/repos/ubuntu2204/x86_64 /
"""

UBUNTU_2404 = """\
Types: deb
URIs: http://archive.example.org/ubuntu/
Suites: noble noble-updates noble-backports
Components: main restricted universe multiverse
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg

Types: deb
URIs: http://security.example.org/ubuntu/
Suites: noble-security
Components: main restricted universe multiverse
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg
"""

DEBIAN_12 = """\
Types: deb
URIs: http://deb.example.org/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://deb.example.org/debian-security
Suites: bookworm-security
Components: main
"""


@pytest.mark.parametrize("name", list(MIRRORS))
def test_one_line_sources(name: str) -> None:
    mirror = MIRRORS[name]
    out = rewrite_one_line(UBUNTU_2204, mirror, https=True).splitlines()
    assert out[0] == "# See http://help.ubuntu.com/community/UpgradeNotes"
    assert out[1] == f"deb {mirror.apt_base}/ubuntu/ jammy main restricted"
    assert out[3] == "# deb-src http://archive.example.org/ubuntu/ jammy universe"
    assert out[4] == f"deb [arch=amd64] {mirror.apt_base}/ubuntu/ jammy universe"
    security = "http://security.example.org/ubuntu/" if mirror.apt_security_upstream else f"{mirror.apt_base}/ubuntu/"
    assert out[5] == f"deb {security} jammy-security main restricted"
    assert out[6].startswith("deb https://vendor.example.com/")  # not an archive a mirror carries


@pytest.mark.parametrize("name", list(MIRRORS))
def test_deb822_sources_ubuntu_2404(name: str) -> None:
    mirror = MIRRORS[name]
    out = rewrite_deb822(UBUNTU_2404, mirror, https=True)
    assert f"URIs: {mirror.apt_base}/ubuntu/\nSuites: noble noble-updates noble-backports" in out
    security = "http://security.example.org/ubuntu/" if mirror.apt_security_upstream else f"{mirror.apt_base}/ubuntu/"
    assert f"URIs: {security}\nSuites: noble-security" in out
    assert out.count("Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg") == 2


@pytest.mark.parametrize("name", list(MIRRORS))
def test_deb822_sources_debian_12(name: str) -> None:
    mirror = MIRRORS[name]
    out = rewrite_deb822(DEBIAN_12, mirror, https=False)
    http_base = mirror.apt_base.replace("https://", "http://")
    assert f"URIs: {http_base}/debian/\nSuites: bookworm bookworm-updates" in out
    upstream = "http://deb.example.org/debian-security"
    security = upstream if mirror.apt_security_upstream else f"{http_base}/debian-security/"
    assert f"URIs: {security}\nSuites: bookworm-security" in out


def test_stanza_mixing_security_is_split_only_where_security_stays_upstream() -> None:
    mixed = "Types: deb\nURIs: http://archive.example.org/ubuntu/\nSuites: noble noble-security\nComponents: main\n"
    tuna = rewrite_deb822(mixed, MIRRORS["tuna"], https=True)
    assert tuna.count("Types: deb") == 2
    assert "URIs: http://archive.example.org/ubuntu/\nSuites: noble-security" in tuna
    aliyun = rewrite_deb822(mixed, MIRRORS["aliyun"], https=True)
    assert aliyun.count("Types: deb") == 1 and "Suites: noble noble-security" in aliyun


def test_pip_conf() -> None:
    aliyun = render_pip_conf(MIRRORS["aliyun"])
    assert "index-url = https://mirrors.aliyun.com/pypi/simple/" in aliyun
    assert "trusted-host = mirrors.aliyun.com" in aliyun
    tuna = render_pip_conf(MIRRORS["tuna"])
    assert "index-url = https://pypi.tuna.tsinghua.edu.cn/simple" in tuna and "trusted-host" not in tuna


def test_condarc_maps_defaults_and_community_channels() -> None:
    text = render_condarc(MIRRORS["tuna"])
    assert "  - https://mirrors.tuna.tsinghua.edu.cn/anaconda/pkgs/main" in text
    assert "  conda-forge: https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud" in text


@pytest.fixture
def image_root(tmp_path: Path) -> MirrorFiles:
    root, home = tmp_path / "root", tmp_path / "home"
    (root / "etc/apt/sources.list.d").mkdir(parents=True)
    (root / "etc/apt/sources.list").write_text(UBUNTU_2204)
    (root / "etc/apt/sources.list.d/debian.sources").write_text(DEBIAN_12)
    (root / "opt/conda/bin").mkdir(parents=True)
    (root / "opt/conda/bin/conda").write_text("")
    home.mkdir()
    files = MirrorFiles(root=root, home=home)
    switch.save_originals(files)
    return files


def test_switch_round_trip_restores_the_base_files(image_root: MirrorFiles) -> None:
    files = image_root
    for name in ("aliyun", "tuna"):
        switch.write_apt(files, switch.lookup(name))
        switch.write_user_files(files, switch.lookup(name))
        assert switch.active(files) == {"apt": name, "pip": name, "conda": name}
    switch.write_apt(files, None)
    switch.write_user_files(files, None)
    assert switch.active(files) == {"apt": "none", "pip": "none", "conda": "none"}
    assert files.apt_list.read_text() == UBUNTU_2204
    assert not files.pip_conf.exists() and not files.condarc.exists()


def test_user_files_not_written_by_pudev_are_left_alone(image_root: MirrorFiles) -> None:
    image_root.pip_conf.parent.mkdir(parents=True)
    image_root.pip_conf.write_text("[global]\nindex-url = https://pypi.example.org/simple\n")
    notes = switch.write_user_files(image_root, switch.lookup("tuna"))
    assert any("pudev did not write it" in note for note in notes)
    assert "example.org" in image_root.pip_conf.read_text()
    assert switch.active(image_root)["pip"] == "custom"


def test_build_sources_leave_etc_alone(image_root: MirrorFiles, tmp_path: Path) -> None:
    switch.write_build_sources(image_root, switch.lookup("aliyun"), tmp_path / "build")
    assert "mirrors.aliyun.com" in (tmp_path / "build/sources.list").read_text()
    assert "mirrors.aliyun.com" in (tmp_path / "build/sources.list.d/debian.sources").read_text()
    assert image_root.apt_list.read_text() == UBUNTU_2204


def test_unknown_mirror() -> None:
    with pytest.raises(PudevError, match="unknown mirror 'ustc': choose one of aliyun, tuna, none"):
        switch.lookup("ustc")
