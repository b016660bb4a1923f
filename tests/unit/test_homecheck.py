"""One line naming the mount to add where a read-only root leaves the home unwritable or noexec
(pudev.image.homecheck): JupyterLab's start, torch's extension builds and the compiler cache, decided
without a container by faking what os.access and statvfs say."""

from __future__ import annotations

import os
import sys
from collections.abc import Collection
from pathlib import Path
from types import SimpleNamespace

import pytest

from pudev.image import homecheck, runenv
from pudev.image.compilers import launcher

FIX = f"add --tmpfs /home/dev:exec,uid={os.getuid()},gid={os.getgid()} (Kubernetes: an emptyDir at /home/dev)"


@pytest.fixture(autouse=True)
def image_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """The image's user and home, whatever this host's passwd holds."""
    monkeypatch.setattr(homecheck, "image_home", lambda environ: "/home/dev")


def fake_mounts(monkeypatch: pytest.MonkeyPatch, *, read_only: Collection[str] = (), noexec: Collection[str] = (),
                unwritable: Collection[str] = ()) -> None:
    """Folders (and what is under them) as a read-only root, a noexec tmpfs or another user's folder."""

    def under(path: str, roots: Collection[str]) -> bool:
        return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)

    real_access, real_statvfs = os.access, os.statvfs

    def access(path: str, mode: int, **kwargs: object) -> bool:
        if mode & os.W_OK and under(str(path), [*read_only, *unwritable]):
            return False
        return real_access(path, mode)

    def statvfs(path: str) -> SimpleNamespace:
        flags = real_statvfs(path).f_flag & ~(os.ST_RDONLY | os.ST_NOEXEC)
        flags |= os.ST_RDONLY if under(str(path), read_only) else 0
        flags |= os.ST_NOEXEC if under(str(path), noexec) else 0
        return SimpleNamespace(f_flag=flags)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(os, "statvfs", statvfs)


def test_a_writable_folder_blocks_nothing(tmp_path: Path) -> None:
    assert homecheck.blocker(str(tmp_path / "a" / "b"), need_exec=True) is None


def test_a_read_only_root_is_named_where_the_folder_would_be_made(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fake_mounts(monkeypatch, read_only={str(tmp_path)})
    assert homecheck.blocker(str(tmp_path / ".local" / "share")) == f"{tmp_path} is read-only"


def test_another_users_folder_is_not_called_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_mounts(monkeypatch, unwritable={str(tmp_path)})
    assert homecheck.blocker(str(tmp_path / "x")) == f"{tmp_path} is not writable by uid {os.getuid()}"


def test_noexec_matters_only_where_a_library_must_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_mounts(monkeypatch, noexec={str(tmp_path)})
    assert homecheck.blocker(str(tmp_path / "x")) is None
    assert homecheck.blocker(str(tmp_path / "x"), need_exec=True) == (
        f"{tmp_path} is on a noexec mount, so a library built there cannot load")


def test_jupyterlab_is_told_which_mount_its_runtime_folder_needs(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The Kubernetes advice before this fix: ~/.cache and /tmp mounted, ~/.local on the read-only root."""
    (tmp_path / ".cache").mkdir()
    fake_mounts(monkeypatch, read_only={str(tmp_path)})
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: not str(path).startswith(str(tmp_path)) or
                        str(path).startswith(str(tmp_path / ".cache")))
    runtime = tmp_path / ".local" / "share" / "jupyter" / "runtime"
    assert homecheck.jupyter_line({"HOME": str(tmp_path)}) == (
        f"JupyterLab needs {runtime}, but {tmp_path} is read-only: {FIX}")
    assert homecheck.jupyter_line({"HOME": str(tmp_path), "JUPYTER_RUNTIME_DIR": str(tmp_path / ".cache" / "rt")}
                                  ) is None


def test_a_writable_home_lets_jupyterlab_start(tmp_path: Path) -> None:
    assert homecheck.jupyter_line({"HOME": str(tmp_path)}) is None


def test_start_jupyter_stops_with_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    fake_mounts(monkeypatch, read_only={str(tmp_path)})
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("JUPYTER_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("JUPYTER_DATA_DIR", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    with pytest.raises(SystemExit) as stopped:
        runenv.home_or_exit("start-jupyter")
    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"start-jupyter: JupyterLab needs {tmp_path}/.local/share/jupyter/runtime, but {tmp_path} is read-only: {FIX}"]


@pytest.fixture
def ccache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An image's ccache, present and executable."""
    binary = tmp_path / "bin" / "ccache"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setattr(launcher, "CCACHE", str(binary))


def test_an_extension_build_on_a_read_only_home_gets_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              ccache: None) -> None:
    home = tmp_path / "home"
    home.mkdir()
    fake_mounts(monkeypatch, read_only={str(home)})
    assert homecheck.extension_lines({"HOME": str(home)}) == [
        f"pudev: torch builds extensions in {home}/.cache/torch_extensions, but {home} is read-only: {FIX}"]


def test_an_arbitrary_uid_on_a_noexec_fallback_home_gets_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  ccache: None) -> None:
    """uid 4242 on a read-only root with only /tmp: HOME=/tmp/home-4242, where a built .so cannot load."""
    fallback = tmp_path / "home-4242"
    fallback.mkdir()
    fake_mounts(monkeypatch, noexec={str(tmp_path)})
    (line,) = homecheck.extension_lines({"HOME": str(fallback)})
    assert line == (f"pudev: torch builds extensions in {fallback}/.cache/torch_extensions, but {fallback} is on a "
                    f"noexec mount, so a library built there cannot load: {FIX}")


def test_a_users_own_extensions_folder_is_named_in_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           ccache: None) -> None:
    fake_mounts(monkeypatch, noexec={str(tmp_path)})
    (line,) = homecheck.extension_lines({"HOME": "/", "TORCH_EXTENSIONS_DIR": str(tmp_path / "ext")})
    assert "point TORCH_EXTENSIONS_DIR at a writable folder without noexec, or unset it and add --tmpfs" in line


def test_an_uncached_build_says_the_cache_is_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ccache: None) -> None:
    home, cache = tmp_path / "home", tmp_path / "var" / "ccache"
    home.mkdir()
    cache.mkdir(parents=True)
    environ = {"HOME": str(home), "CCACHE_DIR": str(cache)}
    assert homecheck.extension_lines(environ) == []  # CCACHE_DIR writable: cached, nothing to say
    fake_mounts(monkeypatch, read_only={str(cache)})
    assert homecheck.extension_lines(environ) == []  # read-only: the cache moves under the home, still quiet
    fake_mounts(monkeypatch, read_only={str(cache)}, unwritable={str(home / ".cache" / "ccache")})
    (home / ".cache" / "ccache").mkdir(parents=True)
    assert homecheck.extension_lines(environ) == [
        f"pudev: the compiler cache is off: neither {cache} nor ~/.cache/ccache is writable, so extensions compile "
        f"from scratch: {FIX}, or mount a volume at {cache}"]


def test_ccache_moves_under_the_home_when_its_folder_is_read_only(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    home, cache = tmp_path / "home", tmp_path / "var" / "ccache"
    home.mkdir()
    cache.mkdir(parents=True)
    environ = {"HOME": str(home), "CCACHE_DIR": str(cache)}
    assert launcher.cache_dir(environ) == str(cache)
    fake_mounts(monkeypatch, read_only={str(cache)})
    assert launcher.cache_dir(environ) == str(home / ".cache" / "ccache")
    fake_mounts(monkeypatch, read_only={str(cache), str(home)})
    assert launcher.cache_dir(environ) is None and not launcher.cache_writable(environ)


def test_the_check_runs_once_when_the_extension_builder_is_imported(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[str] = []

    def lines(environ: object) -> list[str]:
        calls.append("x")
        return ["pudev: one line"]

    monkeypatch.setattr(homecheck, "extension_lines", lines)
    check = homecheck.BuildCheck()
    assert check.find_spec("json") is None and calls == []
    assert check.find_spec(homecheck.BUILD_MODULE) is None  # it finds nothing: the import goes on
    assert check.find_spec(homecheck.BUILD_MODULE) is None
    assert calls == ["x"] and capsys.readouterr().err == "pudev: one line\n"


def test_a_failing_check_never_fails_the_import(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(environ: object) -> list[str]:
        raise RuntimeError("boom")

    monkeypatch.setattr(homecheck, "extension_lines", broken)
    assert homecheck.BuildCheck().find_spec(homecheck.BUILD_MODULE) is None


def test_start_up_installs_the_finder_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    homecheck.install()
    homecheck.install()
    assert sum(isinstance(finder, homecheck.BuildCheck) for finder in sys.meta_path) == 1
    assert isinstance(sys.meta_path[0], homecheck.BuildCheck)


def test_the_fix_names_the_image_users_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the real image_home: PUDEV_USER's passwd home
    assert homecheck.image_home({"PUDEV_USER": "root"}) == "/root"
    assert homecheck.image_home({"PUDEV_USER": "no-such-user-here"}) == "/home/dev"
