"""The variables the Jupyter settings read: good values pass through, a bad one is one line
naming the variable and the form it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pudev.image.runenv import BadSettingError, JupyterSettings, jupyter_settings, settings_or_exit


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert jupyter_settings({"JUPYTER_ROOT_DIR": str(tmp_path)}) == JupyterSettings(8888, "/", str(tmp_path), False)
    empty = {"JUPYTER_PORT": "", "JUPYTER_BASE_URL": "", "JUPYTER_ROOT_DIR": str(tmp_path),
             "PUDEV_JUPYTER_NO_AUTH": ""}
    assert jupyter_settings(empty) == JupyterSettings(8888, "/", str(tmp_path), False)


def test_good_values(tmp_path: Path) -> None:
    environ = {"JUPYTER_PORT": "65535", "JUPYTER_BASE_URL": "/nb/user-1/", "JUPYTER_ROOT_DIR": str(tmp_path),
               "PUDEV_JUPYTER_NO_AUTH": "1"}
    assert jupyter_settings(environ) == JupyterSettings(65535, "/nb/user-1/", str(tmp_path), True)
    assert jupyter_settings({**environ, "PUDEV_JUPYTER_NO_AUTH": "0"}).no_auth is False


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("JUPYTER_PORT", "notaport", "a TCP port number from 1 to 65535, such as 8888"),
    ("JUPYTER_PORT", "0", "a TCP port number"),
    ("JUPYTER_PORT", "65536", "a TCP port number"),
    ("JUPYTER_PORT", "08888", "a TCP port number"),
    ("JUPYTER_PORT", " 8888", "a TCP port number"),
    ("JUPYTER_BASE_URL", "nb/", "a URL path that starts with /, such as /nb/"),
    ("JUPYTER_BASE_URL", "http://host/nb/", "a URL path that starts with /"),
    ("JUPYTER_BASE_URL", "/my notebooks/", "a URL path that starts with /"),
    ("JUPYTER_BASE_URL", "//evil.example/", "a URL path that starts with /"),
    ("JUPYTER_ROOT_DIR", "/no/such/dir", "an existing directory, such as /workspace (mount yours with -v)"),
    ("PUDEV_JUPYTER_NO_AUTH", "yes", "1 (turn token authentication off) or 0 (keep it on, the default)"),
    ("PUDEV_JUPYTER_NO_AUTH", "true", "1 (turn token authentication off)"),
])
def test_a_bad_value_names_the_variable_and_the_form(name: str, value: str, expected: str, tmp_path: Path) -> None:
    environ = {"JUPYTER_ROOT_DIR": str(tmp_path), name: value}
    with pytest.raises(BadSettingError) as raised:
        jupyter_settings(environ)
    message = str(raised.value)
    assert message.startswith(f"{name}={value!r} is not usable: expected ") and expected in message
    assert "\n" not in message


def test_settings_or_exit_prints_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("JUPYTER_PORT", "notaport")
    with pytest.raises(SystemExit) as raised:
        settings_or_exit("jupyter")
    assert raised.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.splitlines() == [
        "jupyter: JUPYTER_PORT='notaport' is not usable: expected a TCP port number from 1 to 65535, such as 8888"]
