"""Platforms as Docker names them (linux/amd64, linux/arm64), and the one this host is."""

from __future__ import annotations

import platform

_MACHINE_TO_PLATFORM = {
    "x86_64": "linux/amd64", "amd64": "linux/amd64", "aarch64": "linux/arm64", "arm64": "linux/arm64",
}


def native_platform() -> str:
    """This host's platform, or '' for a machine pudev does not build for."""
    return _MACHINE_TO_PLATFORM.get(platform.machine().lower(), "")


def architecture(platform_name: str) -> str:
    """linux/arm64 -> arm64: the word Debian, debootstrap and image tags use."""
    return platform_name.split("/", 1)[1]
