"""Mirror rendering for each mirror and each apt format, the system-wide and per-user files,
and the switch round trip."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 hosts
    import tomli as tomllib

import pytest

from pudev.common.errors import PudevError
from pudev.mirror import apt as apt_module
from pudev.mirror import models, switch, torch_wheels
from pudev.mirror.__main__ import main, set_hf, set_mirror, show
from pudev.mirror.apt import build_sources, rewrite_deb822, rewrite_one_line
from pudev.mirror.catalogue import MIRRORS
from pudev.mirror.config import render_condarc, render_pip_conf, render_uv_toml
from pudev.mirror.mirror_files import MirrorFiles

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


@pytest.mark.parametrize("name", list(MIRRORS))
def test_pip_and_uv_files_keep_certificate_checks_on(name: str) -> None:
    """https mirrors with public certificates: nothing may turn pip's or uv's checks off."""
    mirror = MIRRORS[name]
    assert mirror.pypi_index.startswith("https://")
    pip_conf, uv_toml = render_pip_conf(mirror), render_uv_toml(mirror)
    assert f"index-url = {mirror.pypi_index}" in pip_conf
    assert tomllib.loads(uv_toml) == {"index-url": mirror.pypi_index}
    for text in (pip_conf, uv_toml):
        assert "trusted-host" not in text and "TRUSTED_HOST" not in text and "insecure" not in text.lower()


def test_condarc_maps_defaults_and_community_channels() -> None:
    text = render_condarc(MIRRORS["tuna"])
    assert "  - https://mirrors.tuna.tsinghua.edu.cn/anaconda/pkgs/main" in text
    assert "  conda-forge: https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud" in text


def test_system_files_are_where_every_user_reads_them() -> None:
    files = MirrorFiles(root=Path("/"), home=Path("/home/someone"))
    assert files.system_file("pip") == Path("/etc/pip.conf")  # pip's global file
    assert files.system_file("uv") == Path("/etc/uv/uv.toml")  # uv's system config
    assert files.system_file("conda") == Path("/opt/conda/condarc.d/pudev-mirror.yaml")  # conda's root env
    assert files.user_file("pip") == Path("/home/someone/.config/pip/pip.conf")


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
        switch.write_tool_files(files, switch.lookup(name), system=True)
        assert switch.active(files) == {"apt": name, "pip": name, "uv": name, "conda": name}
        assert not any(files.user_file(tool).exists() for tool in files.tools())  # no home needed
        assert all(files.system_file(tool).stat().st_mode & 0o044 == 0o044 for tool in files.tools())
    switch.write_apt(files, None)
    switch.write_tool_files(files, None, system=True)
    assert switch.active(files) == {"apt": "none", "pip": "none", "uv": "none", "conda": "none"}
    assert files.apt_list.read_text() == UBUNTU_2204
    assert not any(files.system_file(tool).exists() for tool in files.tools())


def test_a_users_own_files_win_over_the_system_wide_ones(image_root: MirrorFiles) -> None:
    files = image_root
    switch.write_tool_files(files, switch.lookup("aliyun"), system=True)
    switch.write_tool_files(files, switch.lookup("tuna"), system=False)
    assert switch.active(files) == {"apt": "none", "pip": "tuna", "uv": "tuna", "conda": "tuna"}
    switch.write_tool_files(files, None, system=False)  # a user's `none` drops only their own files
    assert switch.active(files) == {"apt": "none", "pip": "aliyun", "uv": "aliyun", "conda": "aliyun"}
    assert switch.system_state(files, "pip") == "aliyun"


def test_files_not_written_by_pudev_are_left_alone(image_root: MirrorFiles) -> None:
    for system in (True, False):
        path = image_root.system_file("pip") if system else image_root.user_file("pip")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("[global]\nindex-url = https://pypi.example.org/simple\n")
        notes = switch.write_tool_files(image_root, switch.lookup("tuna"), system=system)
        assert notes == [f"left {path} alone: pudev did not write it (move it away to let pudev manage it)"]
        assert "example.org" in path.read_text()
        assert switch.active(image_root)["pip"] == "custom"


def test_without_conda_only_pip_and_uv_are_written(image_root: MirrorFiles) -> None:
    (image_root.root / "opt/conda/bin/conda").unlink()
    switch.write_tool_files(image_root, switch.lookup("aliyun"), system=True)
    assert switch.active(image_root) == {"apt": "none", "pip": "aliyun", "uv": "aliyun"}
    assert not (image_root.root / "opt/conda/condarc.d").exists()


@pytest.mark.skipif(shutil.which("uv", path=str(Path(sys.executable).parent)) is None,
                    reason="uv is not in this environment (make venv installs it)")
def test_uv_reads_the_system_file_and_a_users_own_wins(tmp_path: Path) -> None:
    """The real uv: the system-wide file (found through XDG_CONFIG_DIRS here, /etc/uv in the image)
    sets the index for a user with an empty home, and that user's own file wins over it."""
    uv = str(Path(sys.executable).parent / "uv")
    system, home = tmp_path / "xdg", tmp_path / "home"
    files = MirrorFiles(root=tmp_path / "root", home=home)
    (system / "uv").mkdir(parents=True)
    (system / "uv/uv.toml").write_text(render_uv_toml(MIRRORS["aliyun"]))
    home.mkdir()
    (tmp_path / "req.in").write_text("six\n")

    def index() -> str:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CONFIG_DIRS": str(system)}
        shown = subprocess.run([uv, "pip", "compile", "req.in", "--show-settings"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=60, check=True).stdout
        hosts = [host for host in ("mirrors.aliyun.com", "pypi.tuna.tsinghua.edu.cn") if f'"{host}"' in shown]
        return " ".join(hosts)

    assert index() == "mirrors.aliyun.com"
    switch.write_tool_files(files, switch.lookup("tuna"), system=False)
    assert files.user_file("uv").exists()
    assert index() == "pypi.tuna.tsinghua.edu.cn"


def test_build_sources_leave_etc_alone(image_root: MirrorFiles, tmp_path: Path) -> None:
    build_sources(image_root.root, MIRRORS["aliyun"], tmp_path / "build")
    assert "mirrors.aliyun.com" in (tmp_path / "build/sources.list").read_text()
    assert "mirrors.aliyun.com" in (tmp_path / "build/sources.list.d/debian.sources").read_text()
    assert image_root.apt_list.read_text() == UBUNTU_2204
    build_sources(image_root.root, None, tmp_path / "own")  # no build mirror: the base's own, as they are
    assert (tmp_path / "own/sources.list").read_text() == UBUNTU_2204


@pytest.mark.parametrize("args", [[], ["https://mirrors.example.org", "sometimes", "/tmp/x"], ["a", "mirror"]])
def test_the_build_steps_apt_rewriter_refuses_bad_arguments_in_one_line(args: list[str]) -> None:
    """As the OS package step runs it: the file alone, no pudev on the path."""
    result = subprocess.run([sys.executable, "-E", str(Path(apt_module.__file__)), *args], capture_output=True,
                            text=True, check=False)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert "BUILD_APT_MIRROR" in result.stderr and "Traceback" not in result.stderr


def test_set_mirror_as_a_user_writes_their_files_and_says_what_needs_root(
        image_root: MirrorFiles, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 4242)
    switch.write_tool_files(image_root, switch.lookup("aliyun"), system=True)
    lines = set_mirror(image_root, "tuna", apt=True)
    assert "apt sources unchanged: they need root" in lines[-1]
    assert show(image_root)[0] == "apt: none  pip: tuna  uv: tuna  conda: tuna  hf: none"
    lines = set_mirror(image_root, "none", apt=False)
    assert lines[0].startswith("pip, uv, conda still use the image-wide mirror: ")
    assert "pudev mirror none" in lines[0]
    assert show(image_root)[0] == "apt: none  pip: aliyun  uv: aliyun  conda: aliyun  hf: none"


def test_set_mirror_as_root_switches_every_user(image_root: MirrorFiles, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert set_mirror(image_root, "tuna", apt=True) == []
    assert switch.active(image_root) == {"apt": "tuna", "pip": "tuna", "uv": "tuna", "conda": "tuna"}
    assert not image_root.user_file("pip").exists()
    assert set_mirror(image_root, "none", apt=True) == []
    assert switch.active(image_root) == {"apt": "none", "pip": "none", "uv": "none", "conda": "none"}


def test_unknown_mirror() -> None:
    with pytest.raises(PudevError, match="unknown mirror 'ustc': choose one of aliyun, tuna, none"):
        switch.lookup("ustc")


# arm64 Ubuntu keeps its packages in ubuntu-ports (ports.ubuntu.com), security updates included: a mirror
# carries them under <apt_base>/ubuntu-ports/, never under ubuntu/ (which holds amd64 alone).
UBUNTU_2404_ARM64 = """\
Types: deb
URIs: http://ports.ubuntu.com/ubuntu-ports/
Suites: noble noble-updates noble-backports
Components: main restricted universe multiverse
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg

Types: deb
URIs: http://ports.ubuntu.com/ubuntu-ports/
Suites: noble-security
Components: main restricted universe multiverse
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg
"""

UBUNTU_2204_ARM64 = """\
deb http://ports.ubuntu.com/ubuntu-ports/ jammy main restricted
deb http://ports.ubuntu.com/ubuntu-ports/ jammy-updates main restricted universe
# deb-src http://ports.ubuntu.com/ubuntu-ports/ jammy universe
deb [arch=arm64] http://ports.ubuntu.com/ubuntu-ports/ jammy-backports main restricted universe multiverse
deb http://ports.ubuntu.com/ubuntu-ports/ jammy-security main restricted
"""


@pytest.mark.parametrize("name", list(MIRRORS))
def test_deb822_sources_ubuntu_2404_arm64(name: str) -> None:
    mirror = MIRRORS[name]
    out = rewrite_deb822(UBUNTU_2404_ARM64, mirror, https=True)
    ports = f"{mirror.apt_base}/ubuntu-ports/"
    assert f"URIs: {ports}\nSuites: noble noble-updates noble-backports\n" in out
    security = "http://ports.ubuntu.com/ubuntu-ports/" if mirror.apt_security_upstream else ports
    assert f"URIs: {security}\nSuites: noble-security\n" in out
    assert out.count("Components: main restricted universe multiverse") == 2
    assert out.count("Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg") == 2
    assert f"{mirror.apt_base}/ubuntu/" not in out


@pytest.mark.parametrize("name", list(MIRRORS))
def test_one_line_sources_ubuntu_2204_arm64(name: str) -> None:
    mirror = MIRRORS[name]
    out = rewrite_one_line(UBUNTU_2204_ARM64, mirror, https=True).splitlines()
    ports = f"{mirror.apt_base}/ubuntu-ports/"
    assert out[0] == f"deb {ports} jammy main restricted"
    assert out[1] == f"deb {ports} jammy-updates main restricted universe"
    assert out[2] == "# deb-src http://ports.ubuntu.com/ubuntu-ports/ jammy universe"
    assert out[3] == f"deb [arch=arm64] {ports} jammy-backports main restricted universe multiverse"
    security = "http://ports.ubuntu.com/ubuntu-ports/" if mirror.apt_security_upstream else ports
    assert out[4] == f"deb {security} jammy-security main restricted"


@pytest.fixture
def no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.setattr(models, "APPLIED", {})


def _start(files: MirrorFiles, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a new Python gets at start-up (pudev.pth) for this user."""
    env = {"HOME": str(files.home), **(env or {})}
    models.apply(env, root=str(files.root))
    return env


@pytest.mark.usefixtures("no_endpoint")
def test_hf_endpoint_is_opt_in_and_reaches_every_new_python(image_root: MirrorFiles,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    assert "HF_ENDPOINT" not in _start(image_root)  # nothing until someone asks: a third party's service
    monkeypatch.setattr("os.geteuid", lambda: 0)
    lines = set_hf(image_root, "hf-mirror")
    assert "https://hf-mirror.com" in lines[0] and "not by Hugging Face" in lines[0]
    assert _start(image_root)["HF_ENDPOINT"] == "https://hf-mirror.com"
    assert show(image_root)[0].endswith("  hf: hf-mirror")
    # a variable the user sets wins, and --show says so
    assert _start(image_root, {"HF_ENDPOINT": "https://hub.example.org"})["HF_ENDPOINT"] == "https://hub.example.org"
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.example.org")
    assert show(image_root)[0].endswith("  hf: custom")
    monkeypatch.delenv("HF_ENDPOINT")
    set_hf(image_root, "none")
    assert "HF_ENDPOINT" not in _start(image_root) and not image_root.models_file(system=True).exists()


@pytest.mark.usefixtures("no_endpoint")
def test_a_user_turns_the_image_wide_endpoint_off_for_themselves(image_root: MirrorFiles,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    switch.write_models(image_root, "hf-mirror", system=True)
    monkeypatch.setattr("os.geteuid", lambda: 4242)
    assert set_hf(image_root, "none") == []
    assert "HF_ENDPOINT" not in _start(image_root)  # their own `none` wins over root's choice
    assert image_root.models_file(system=True).exists()
    set_hf(image_root, "hf-mirror")
    assert _start(image_root)["HF_ENDPOINT"] == "https://hf-mirror.com"


@pytest.mark.usefixtures("no_endpoint")
def test_start_up_reads_only_the_endpoint_from_the_file(image_root: MirrorFiles) -> None:
    """The file is read into every Python's environment: a line that is not the endpoint is ignored,
    and an unreadable file stops nothing."""
    path = image_root.models_file(system=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("LD_PRELOAD=/tmp/x.so\nHF_ENDPOINT=https://hf-mirror.com\n")
    assert _start(image_root) == {"HOME": str(image_root.home), "HF_ENDPOINT": "https://hf-mirror.com"}
    path.write_bytes(b"\xff\xfe")
    assert _start(image_root) == {"HOME": str(image_root.home)}


@pytest.mark.usefixtures("no_endpoint")
def test_without_a_home_the_working_folder_chooses_nothing(image_root: MirrorFiles, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    planted = tmp_path / models.USER_FILE  # a checkout that carries a .config of its own
    planted.parent.mkdir(parents=True)
    planted.write_text("HF_ENDPOINT=https://hub.example.org\n")
    monkeypatch.chdir(tmp_path)
    env: dict[str, str] = {"HOME": ""}
    models.apply(env, root=str(image_root.root))
    assert "HF_ENDPOINT" not in env


def test_hf_rejects_an_unknown_endpoint_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--hf", "modelscope"])
    errors = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(errors) == 1, errors
    assert "--hf" in errors[0] and "'hf-mirror'" in errors[0] and "pudev mirror --help" in errors[0]


@pytest.mark.parametrize(("version_py", "tag"), [
    ("__version__ = '2.4.1'\ncuda: Optional[str] = '12.1'\n", "cu121"),  # torch 2.4
    ("cuda: str | None = '13.2'\nhip = None\n", "cu132"),
    ("cuda: Optional[str] = None\n", ""),  # a CPU build
])
def test_torch_wheels_folder_follows_the_images_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      version_py: str, tag: str) -> None:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch/__init__.py").write_text("")
    (tmp_path / "torch/version.py").write_text(version_py)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert torch_wheels.torch_cuda_tag() == tag
    expected = f"https://mirrors.aliyun.com/pytorch-wheels/{tag}/" if tag else ""
    assert torch_wheels.folder(MIRRORS["aliyun"], tag) == expected
    assert torch_wheels.folder(MIRRORS["tuna"], tag) == ""  # Tsinghua keeps no copy of torch's index
    assert torch_wheels.folder(None, tag) == ""
