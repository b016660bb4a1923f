"""Whether this container runs under binfmt emulation (an arm64 image on an x86 host, say): the
kernel then starts PID 1 through the emulator, so /proc/1/cmdline names it first (qemu shows
programs their own argv, but not another process's)."""

from __future__ import annotations

from pathlib import Path


def pid1_command() -> list[str]:
    return [part.decode() for part in Path("/proc/1/cmdline").read_bytes().split(b"\0") if part]


def emulator() -> str:
    """The emulator's program name when PID 1 runs under one, else ''."""
    first = Path(pid1_command()[0]).name
    return first if "qemu" in first else ""
