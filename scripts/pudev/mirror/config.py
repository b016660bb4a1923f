"""pip.conf and .condarc contents for a mirror. Each file starts with MARKER so a
switch back to `none` removes only files pudev wrote."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pudev.mirror.catalogue import Mirror

MARKER = "# Written by `pudev mirror`"


def render_pip_conf(mirror: Mirror) -> str:
    lines = [f"{MARKER} {mirror.name}; `pudev mirror none` removes it.", "[global]", f"index-url = {mirror.pypi_index}"]
    if mirror.pypi_trusted_hosts:
        lines.append(f"trusted-host = {' '.join(mirror.pypi_trusted_hosts)}")
    return "\n".join(lines) + "\n"


def render_condarc(mirror: Mirror) -> str:
    base = mirror.conda_base
    return "\n".join(
        [
            f"{MARKER} {mirror.name}; `pudev mirror none` removes it.",
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


def written_by_pudev(text: str) -> bool:
    return text.startswith(MARKER)


def pip_index_host(text: str) -> str:
    """The host of index-url in a pip.conf, or '' when it sets none."""
    match = re.search(r"^\s*index-url\s*=\s*(\S+)", text, re.MULTILINE)
    return urlsplit(match.group(1)).netloc if match else ""
