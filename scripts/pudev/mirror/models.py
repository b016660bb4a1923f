"""Where model downloads go: the Hugging Face endpoint `pudev mirror --hf` sets for every Python.

huggingface_hub (and transformers, datasets, timm through it) reads HF_ENDPOINT once, when it is
imported, so the setting must be in the environment before any user code runs. `pudev mirror`
writes it to a small file; pudev.pth's start-up reads it into os.environ in every Python process,
Jupyter kernels included. A variable set by the user (`docker run -e HF_ENDPOINT=...`) always wins.

Opt-in: no Hugging Face mirror is run by Aliyun or Tsinghua, and the one users in China name is a
third party's, so the image never sends anyone there unless they ask.

Imported at every interpreter start: the standard library's os alone.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import MutableMapping

VARIABLE = "HF_ENDPOINT"
# name -> (endpoint, who runs it): `pudev mirror --hf NAME` and the docs name the operator.
HF_MIRRORS: dict[str, tuple[str, str]] = {
    "hf-mirror": ("https://hf-mirror.com", "a community service run by one person on donations, "
                                           "not by Hugging Face, Aliyun or Tsinghua"),
}
NO_HF_MIRROR = "none"
HF_CHOICES: tuple[str, ...] = (*HF_MIRRORS, NO_HF_MIRROR)
MARKER = "# Written by `pudev mirror --hf`"
# Relative to the image root and to a home. A user's own file wins over the system-wide one as a
# whole, so `pudev mirror --hf none` without root turns an image-wide endpoint off for that user.
SYSTEM_FILE = "etc/pudev/mirror/models.env"
USER_FILE = ".config/pudev/models.env"


def render(name: str) -> str:
    lines = [f"{MARKER} {name}; `pudev mirror --hf none` turns it off."]
    if name in HF_MIRRORS:
        lines.append(f"{VARIABLE}={HF_MIRRORS[name][0]}")
    return "\n".join(lines) + "\n"


def parse(text: str) -> dict[str, str]:
    """KEY=VALUE lines of a file pudev wrote; anything else in it is ignored."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key == VARIABLE and value:
            values[key] = value.strip()
    return values


# What apply() put into this interpreter's environment, so that `pudev mirror --show` can tell a
# value the user set from one the file gave.
APPLIED: dict[str, str] = {}


def effective_file(root: str, home: str) -> str | None:
    """The file that applies: this user's own if there is one, else the system-wide one."""
    # Never a relative path: with HOME unset, a folder's own .config would otherwise choose the endpoint.
    own = [os.path.join(home, USER_FILE)] if os.path.isabs(home) else []
    for path in (*own, os.path.join(root, SYSTEM_FILE)):
        if os.path.isfile(path):
            return path
    return None


def from_files(root: str, home: str) -> str:
    """The endpoint the files give ('' for none)."""
    path = effective_file(root, home)
    if path is None:
        return ""
    try:
        with open(path, encoding="utf-8") as file:
            return parse(file.read()).get(VARIABLE, "")
    except (OSError, UnicodeDecodeError):
        return ""


def apply(env: MutableMapping[str, str], root: str = "/") -> None:
    """At start-up: put the chosen endpoint into `env` unless the user set one."""
    if VARIABLE in env:
        return
    endpoint = from_files(root, env.get("HOME", ""))
    if endpoint:
        env[VARIABLE] = APPLIED[VARIABLE] = endpoint


def endpoint(env: MutableMapping[str, str], root: str, home: str) -> str:
    """What a new Python started from here uses: the user's own HF_ENDPOINT, else the files'."""
    own = env.get(VARIABLE, "")
    return own if own and own != APPLIED.get(VARIABLE) else from_files(root, home)


def state(url: str) -> str:
    """A name from HF_MIRRORS for an endpoint, `none` (huggingface.co itself) or `custom`."""
    url = url.rstrip("/")
    if not url:
        return NO_HF_MIRROR
    return next((name for name, (known, _) in HF_MIRRORS.items() if known == url), "custom")
