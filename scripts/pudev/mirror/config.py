"""pip.conf, uv.toml and .condarc contents for a mirror. Each file starts with MARKER so a
switch back to `none` removes only files pudev wrote.

No file ever sets pip's `trusted-host` or uv's `allow-insecure-host`: the mirrors serve
HTTPS with publicly trusted certificates, and those settings would turn the checks off."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pudev.mirror.catalogue import Mirror

MARKER = "# Written by `pudev mirror`"


def _header(mirror: Mirror) -> str:
    return f"{MARKER} {mirror.name}; `pudev mirror none` removes it."


def render_pip_conf(mirror: Mirror) -> str:
    return "\n".join([_header(mirror), "[global]", f"index-url = {mirror.pypi_index}"]) + "\n"


def render_uv_toml(mirror: Mirror) -> str:
    # `index-url` rather than `[[index]]`: every uv that reads a uv.toml understands it.
    return "\n".join([_header(mirror), f'index-url = "{mirror.pypi_index}"']) + "\n"


def render_condarc(mirror: Mirror) -> str:
    base = mirror.conda_base
    return "\n".join(
        [
            _header(mirror),
            "show_channel_urls: true",
            "default_channels:",
            f"  - {base}/pkgs/main",
            f"  - {base}/pkgs/r",
            "custom_channels:",
            f"  conda-forge: {base}/cloud",
            f"  pytorch: {base}/cloud",
            "",
        ]
    )


RENDERERS = {"pip": render_pip_conf, "uv": render_uv_toml, "conda": render_condarc}


def written_by_pudev(text: str) -> bool:
    return text.startswith(MARKER)


def index_host(text: str) -> str:
    """The host of index-url in a pip.conf or uv.toml, or '' when it sets none."""
    match = re.search(r"""^\s*index-url\s*=\s*["']?([^\s"']+)""", text, re.MULTILINE)
    return urlsplit(match.group(1)).netloc if match else ""
