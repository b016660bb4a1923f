"""`pudev jupyter` runs the quick start's `docker run`: the flags the README and docs/quickstart.md show are
the ones it passes, so the page and the command cannot drift apart."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from pudev.cli import main
from pudev.engine.jupyter import run_options
from pudev.paths import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", REPO_ROOT / "docs/quickstart.md"]
RUN = re.compile(r"^docker run (?:[^\n]*\\\n)*[^\n]*$", re.MULTILINE)


def shown_flags(page: Path) -> list[str]:
    """The page's first `docker run` for JupyterLab: its words between `docker run` and the image."""
    command = RUN.search(page.read_text())
    assert command, f"{page.name} shows no docker run"
    words = shlex.split(command.group(0).replace("\\\n", " "))
    assert words[:2] == ["docker", "run"] and words[-1].startswith("ghcr.io/OWNER/pytorch-universal-dev:")
    return words[2:-1]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_the_page_and_pudev_jupyter_pass_the_same_flags(page: Path) -> None:
    flags = run_options(gpus=True, port=8888, workspace=Path("/HERE"), uid=1111, gid=2222, terminal=True)
    as_shown = [flag.replace("/HERE", "$PWD").replace("1111", "$(id -u)").replace("2222", "$(id -g)")
                for flag in flags]
    assert shown_flags(page) == as_shown


def test_no_gpus_and_no_terminal_leave_their_flags_out() -> None:
    flags = run_options(gpus=False, port=9999, workspace=Path("/w"), uid=0, gid=0, terminal=False)
    assert "--gpus" not in flags and "-it" not in flags
    assert "127.0.0.1:9999:8888" in flags and "--rm" in flags and "--shm-size=8g" in flags


@pytest.mark.parametrize(("args", "complaint"), [
    (["--image", "x", "cu126"], "not several"),
    (["--image", "x", "--port", "0"], "--port 0"),
    (["--image", "x", "--workspace", "/nonexistent/folder"], "--workspace /nonexistent/folder"),
    (["cu126", "cu121"], "runs one image"),
])
def test_bad_input_is_one_line(args: list[str], complaint: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jupyter", *args]) != 0
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and error.startswith("pudev: error:") and complaint in error


def test_a_workspace_behind_a_folder_this_user_cannot_enter_is_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def denied(self: Path) -> bool:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "is_dir", denied)  # what a non-root user meets under another user's 0700 folder
    assert main(["jupyter", "--image", "x", "--workspace", "/root/work"]) != 0
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "--workspace /root/work" in error and "Traceback" not in error
