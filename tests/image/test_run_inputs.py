"""Every variable the entrypoint and JupyterLab's start read: a bad value is exactly one line
naming it and the form it needs, and a non-zero exit, at once; no traceback, no retry.
(tests/e2e/test_any_user.py sends the same values through `docker run`.)"""

from __future__ import annotations

import os
import subprocess
import time

import pytest

ENTRYPOINT_CASES = {
    "PUDEV_UID=abc": ({"PUDEV_UID": "abc"}, "PUDEV_UID='abc' is not an id: expected a whole number"),
    "PUDEV_UID too big": ({"PUDEV_UID": "4294967295"}, "PUDEV_UID='4294967295' is not an id"),
    "PUDEV_GID=-5": ({"PUDEV_GID": "-5"}, "PUDEV_GID='-5' is not an id"),
    "PUDEV_GID=0100": ({"PUDEV_GID": "0100"}, "PUDEV_GID='0100' is not an id"),
    "PUDEV_USER=bob": ({"PUDEV_USER": "bob"}, "PUDEV_USER='bob' names no user in this image"),
    "PUDEV_UID without root": ({"PUDEV_UID": "1234"}, "PUDEV_UID/PUDEV_GID need the container to start as root"),
    "PUDEV_SKIP_START_HOOKS=yes": ({"PUDEV_SKIP_START_HOOKS": "yes"}, "PUDEV_SKIP_START_HOOKS='yes' is not usable"),
    "PUDEV_START_HOOKS_DIR=/nope": ({"PUDEV_START_HOOKS_DIR": "/nope"},
                                    "PUDEV_START_HOOKS_DIR='/nope' is not usable: expected an existing directory"),
}
JUPYTER_CASES = {
    "JUPYTER_PORT=notaport": ({"JUPYTER_PORT": "notaport"}, "JUPYTER_PORT='notaport' is not usable: expected a TCP"),
    "JUPYTER_PORT=70000": ({"JUPYTER_PORT": "70000"}, "JUPYTER_PORT='70000' is not usable"),
    "JUPYTER_BASE_URL=nb": ({"JUPYTER_BASE_URL": "nb"}, "JUPYTER_BASE_URL='nb' is not usable: expected a URL path"),
    "JUPYTER_ROOT_DIR=/nope": ({"JUPYTER_ROOT_DIR": "/nope"}, "JUPYTER_ROOT_DIR='/nope' is not usable: expected an"),
    "PUDEV_JUPYTER_NO_AUTH=yes": ({"PUDEV_JUPYTER_NO_AUTH": "yes"}, "PUDEV_JUPYTER_NO_AUTH='yes' is not usable"),
}


def _one_line_failure(argv: list[str], env: dict[str, str], expected: str, *, within: float) -> None:
    started = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                            env={**os.environ, **env}, check=False)
    elapsed = time.monotonic() - started
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert result.returncode == 2, (result.returncode, lines)
    assert len(lines) == 1 and expected in lines[0], lines
    assert elapsed < within, f"{elapsed:.1f} s"


@pytest.mark.parametrize("case", ENTRYPOINT_CASES)
def test_entrypoint_inputs(case: str) -> None:
    env, expected = ENTRYPOINT_CASES[case]
    _one_line_failure(["pudev-entrypoint", "echo", "the command ran"], env, f"pudev-entrypoint: {expected}",
                      within=5)


@pytest.mark.parametrize("case", JUPYTER_CASES)
def test_start_jupyter_inputs(case: str) -> None:
    env, expected = JUPYTER_CASES[case]
    _one_line_failure(["start-jupyter"], env, f"start-jupyter: {expected}", within=5)


@pytest.mark.parametrize("case", ["JUPYTER_PORT=notaport", "PUDEV_JUPYTER_NO_AUTH=yes"])
def test_jupyter_started_by_hand_checks_them_too(case: str) -> None:
    """`jupyter lab` without start-jupyter (a Kubernetes command:) reads the same config file."""
    env, expected = JUPYTER_CASES[case]
    _one_line_failure(["jupyter", "lab"], env, f"jupyter: {expected}", within=60)


def test_good_ids_pass_the_entrypoint_checks() -> None:
    """Not root, so valid ids still stop it, but at the root check, not at the value check."""
    result = subprocess.run(["pudev-entrypoint", "true"], env={**os.environ, "PUDEV_UID": "4242", "PUDEV_GID": "0"},
                            capture_output=True, text=True, timeout=60, check=False)
    assert "need the container to start as root" in result.stderr
    plain = subprocess.run(["pudev-entrypoint", "echo", "ran"], capture_output=True, text=True, timeout=60, check=False)
    assert (plain.returncode, plain.stdout, plain.stderr) == (0, "ran\n", "")
