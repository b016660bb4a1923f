"""Any user id gets a writable HOME and a user name (pudev.image.home), decided without a container."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

import pytest

from pudev.image import home

UID = os.getuid()


@pytest.fixture
def nameless(monkeypatch: pytest.MonkeyPatch) -> None:
    """This uid as docker gives an arbitrary one: no passwd entry."""
    monkeypatch.setattr(home, "_passwd", lambda uid: None)


def test_a_usable_home_is_kept(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path), "USER": "someone"}
    assert home.ensure(environ, uid=UID, parent=str(tmp_path)) == {}
    assert environ == {"HOME": str(tmp_path), "USER": "someone"}


@pytest.mark.parametrize("given", ["/", "", None, "/nonexistent/home"])
def test_a_nameless_uid_gets_its_own_home_under_tmp(given: str | None, tmp_path: Path, nameless: None) -> None:
    environ = {} if given is None else {"HOME": given}
    changed = home.ensure(environ, uid=UID, parent=str(tmp_path))
    own = tmp_path / f"home-{UID}"
    assert changed == {"HOME": str(own), "USER": f"uid-{UID}", "LOGNAME": f"uid-{UID}"}
    assert environ["HOME"] == str(own) and stat.S_IMODE(own.stat().st_mode) == 0o700
    assert home.ensure(environ, uid=UID, parent=str(tmp_path)) == {}  # once fixed, nothing more to do


def test_the_passwd_home_comes_before_the_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = pwd.struct_passwd(("dev", "x", UID, UID, "", str(tmp_path / "dev"), "/usr/bin/zsh"))
    (tmp_path / "dev").mkdir()
    monkeypatch.setattr(home, "_passwd", lambda uid: entry)
    environ = {"HOME": "/"}
    assert home.ensure(environ, uid=UID, parent=str(tmp_path)) == {"HOME": str(tmp_path / "dev")}
    assert "USER" not in environ  # a uid with a name needs none from us


def test_the_image_users_home_serves_group_0(tmp_path: Path, nameless: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenShift: a random uid with gid 0 shares /home/dev, which group 0 may write."""
    shared = tmp_path / "home-of-dev"
    shared.mkdir()
    monkeypatch.setattr(home, "_home_of", lambda name: str(shared) if name == "dev" else "")
    environ = {"HOME": "/", "PUDEV_USER": "dev"}
    assert home.ensure(environ, uid=UID, parent=str(tmp_path))["HOME"] == str(shared)
    environ = {"HOME": "/", "PUDEV_USER": "nosuchuser"}
    assert home.ensure(environ, uid=UID, parent=str(tmp_path))["HOME"] == str(tmp_path / f"home-{UID}")


def test_a_planted_fallback_is_refused(tmp_path: Path, nameless: None) -> None:
    """/tmp is shared: a link planted at /tmp/home-UID must not become anyone's HOME."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / f"home-{UID}").symlink_to(elsewhere)
    environ = {"HOME": "/", "USER": "u"}
    assert home.ensure(environ, uid=UID, parent=str(tmp_path)) == {}
    assert environ["HOME"] == "/"


@pytest.mark.skipif(UID != 0, reason="making a directory owned by another uid needs root")
def test_someone_elses_fallback_is_refused(tmp_path: Path, nameless: None) -> None:
    taken = tmp_path / f"home-{UID}"
    taken.mkdir()
    os.chown(taken, 4242, 4242)
    assert home.choose_home(UID, {"HOME": "/"}, parent=str(tmp_path)) == ""


def test_shell_exports(tmp_path: Path, nameless: None, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(home, "FALLBACK_PARENT", str(tmp_path))
    monkeypatch.setenv("HOME", "/")  # restored after the test, whatever `ensure` writes
    monkeypatch.setattr(home, "ensure", lambda: os.environ.update({"HOME": "/tmp/it's mine"}))
    monkeypatch.setenv("USER", "uid-7")
    monkeypatch.setenv("LOGNAME", "uid-7")
    assert home.main(["--sh"]) == 0
    assert capsys.readouterr().out.splitlines() == ["export HOME='/tmp/it'\"'\"'s mine'", "export USER=uid-7",
                                                    "export LOGNAME=uid-7"]
    assert home.main([]) == 2


def test_startup_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> dict[str, str]:
        raise RuntimeError("anything at all")

    monkeypatch.setattr(home, "ensure", broken)
    home.startup()


def test_the_user_site_follows_the_new_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pip install --user` packages import although Python started with HOME=/."""
    import site
    import sys

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PYTHONUSERBASE", raising=False)
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)
    monkeypatch.setattr(site, "USER_BASE", None)
    monkeypatch.setattr(site, "USER_SITE", None)
    user_site = Path(site.getusersitepackages())
    assert user_site.is_relative_to(tmp_path)
    user_site.mkdir(parents=True)
    system = site.getsitepackages()[0]
    monkeypatch.setattr(sys, "path", ["/stdlib", system, "/elsewhere"])
    home._add_user_site()
    assert sys.path == ["/stdlib", str(user_site), system, "/elsewhere"]
    home._add_user_site()  # once is enough
    assert sys.path.count(str(user_site)) == 1


def test_the_uids_own_home_is_kept_on_a_read_only_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hardened run (--read-only, tmpfs folders under /home/dev) keeps its HOME."""
    own = tmp_path / "dev"
    own.mkdir()
    entry = pwd.struct_passwd(("dev", "x", UID, UID, "", str(own), "/usr/bin/zsh"))
    monkeypatch.setattr(home, "_passwd", lambda uid: entry)
    monkeypatch.setattr(home, "usable", lambda path: False)  # what os.access says on a read-only filesystem
    environ = {"HOME": str(own)}
    assert home.ensure(environ, uid=UID, parent=str(tmp_path)) == {}
    environ = {"HOME": str(tmp_path / "someone-else")}
    assert home.ensure(environ, uid=UID, parent=str(tmp_path)) == {}  # nothing usable found: left alone
    assert environ["HOME"] == str(tmp_path / "someone-else")


@pytest.mark.parametrize(("path", "expected"), [
    ("/usr/local/bin:/usr/bin", "/usr/local/bin:/usr/bin:/home/dev/.local/bin"),
    ("/home/dev/.local/bin:/usr/bin", "/home/dev/.local/bin:/usr/bin"),  # already there, wherever it is
    ("", "/home/dev/.local/bin")])
def test_the_users_commands_folder_comes_last_on_path(path: str, expected: str) -> None:
    environ = {"HOME": "/home/dev", "PATH": path}
    home.add_user_bin(environ)
    assert environ["PATH"] == expected


def test_no_commands_folder_without_an_absolute_home() -> None:
    environ = {"HOME": "relative", "PATH": "/usr/bin"}
    home.add_user_bin(environ)
    assert environ["PATH"] == "/usr/bin"


def test_any_uid_takes_a_writable_image_home_before_tmp(tmp_path: Path, nameless: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The hardened run mounts one tmpfs at /home/dev that belongs to the uid it runs as (4242:4242, no passwd
    entry, in no group of the image's): that uid gets it as HOME (exec, unlike /tmp), and no /tmp/home-UID."""
    shared = tmp_path / "home-of-dev"
    shared.mkdir()
    monkeypatch.setattr(home, "_home_of", lambda name: str(shared) if name == "dev" else "")
    for start in ("/", "", "/nonexistent"):
        environ = {"HOME": start, "PUDEV_USER": "dev"}
        assert home.ensure(environ, uid=4242, parent=str(tmp_path)) == {
            "HOME": str(shared), "USER": "uid-4242", "LOGNAME": "uid-4242"}
    assert not (tmp_path / "home-4242").exists()
