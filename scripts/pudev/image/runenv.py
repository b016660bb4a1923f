"""The variables JupyterLab's settings read, checked before the server starts.

A bad value stops the start with one line that names the variable, the value and the
form it needs, and exit status 2: no traceback, nothing to retry. So does a home JupyterLab
cannot write (a read-only root without its mount): the line names the mount to add.
(/etc/jupyter/jupyter_server_config.py runs `jupyter_settings`; pudev-entrypoint checks
PUDEV_USER, PUDEV_UID and PUDEV_GID itself, in sh.)

Standard library only: the Jupyter config imports it from any Python that starts Jupyter.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass

EXIT_BAD_SETTING = 2
_PORT = re.compile(r"[1-9][0-9]{0,4}")
_URL_PATH = re.compile(r"/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*")


class BadSettingError(ValueError):
    """One variable with a value the image cannot use; str() is the whole message."""


@dataclass(frozen=True)
class JupyterSettings:
    port: int
    base_url: str
    root_dir: str
    no_auth: bool


def _bad(name: str, value: str, expected: str) -> BadSettingError:
    return BadSettingError(f"{name}={value!r} is not usable: expected {expected}")


def port(environ: Mapping[str, str]) -> int:
    value = environ.get("JUPYTER_PORT", "") or "8888"
    if not _PORT.fullmatch(value) or int(value) > 65535:
        raise _bad("JUPYTER_PORT", value, "a TCP port number from 1 to 65535, such as 8888")
    return int(value)


def base_url(environ: Mapping[str, str]) -> str:
    value = environ.get("JUPYTER_BASE_URL", "") or "/"
    if not _URL_PATH.fullmatch(value) or "//" in value:
        raise _bad("JUPYTER_BASE_URL", value, "a URL path that starts with /, such as /nb/")
    return value


def root_dir(environ: Mapping[str, str]) -> str:
    value = environ.get("JUPYTER_ROOT_DIR", "") or "/workspace"
    if not os.path.isdir(value):
        raise _bad("JUPYTER_ROOT_DIR", value, "an existing directory, such as /workspace (mount yours with -v)")
    return value


def no_auth(environ: Mapping[str, str]) -> bool:
    value = environ.get("PUDEV_JUPYTER_NO_AUTH", "")
    if value not in ("", "0", "1"):
        raise _bad("PUDEV_JUPYTER_NO_AUTH", value, "1 (turn token authentication off) or 0 (keep it on, the default)")
    return value == "1"


def jupyter_settings(environ: Mapping[str, str] | None = None) -> JupyterSettings:
    """Every variable the Jupyter config reads; the first bad one raises BadSettingError."""
    environ = os.environ if environ is None else environ
    return JupyterSettings(port=port(environ), base_url=base_url(environ), root_dir=root_dir(environ),
                           no_auth=no_auth(environ))


def settings_or_exit(program: str) -> JupyterSettings:
    """The settings, or one line on stderr and exit 2 (the config file calls this)."""
    try:
        return jupyter_settings()
    except BadSettingError as error:
        print(f"{program}: {error}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_SETTING) from None


def home_or_exit(program: str) -> None:
    """One line and exit 2 when JupyterLab could not write its runtime directory (a read-only root without a
    writable home): the mount to add, not JupyterLab's OSError two seconds later."""
    from pudev.image import homecheck

    line = homecheck.jupyter_line(os.environ)
    if line is not None:
        print(f"{program}: {line}", file=sys.stderr)
        raise SystemExit(homecheck.EXIT_NO_MOUNT)


if __name__ == "__main__":
    # start-jupyter checks before Jupyter's own import time (seconds) so a bad value fails at once.
    settings_or_exit(sys.argv[1] if len(sys.argv) > 1 else "pudev")
    home_or_exit(sys.argv[1] if len(sys.argv) > 1 else "pudev")
