"""Whether this host can run another platform's programs: the kernel's binfmt_misc
handlers, which `docker build --platform` and `docker run --platform` rely on.

Without one, a foreign build fails deep inside its first RUN step with `exec format
error`; checking first turns that into one line that names the fix."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.common.platforms import native_platform

BINFMT_DIR = Path("/proc/sys/fs/binfmt_misc")
# The ELF machine field (e_machine, little-endian) each platform's programs carry, as binfmt's magic shows it.
_ELF_MACHINE = {"linux/arm64": "b700", "linux/amd64": "3e00"}
INSTALL_HINT = ("install an emulator: `sudo apt-get install qemu-user-static binfmt-support` (Debian/Ubuntu), "
                "or `docker run --privileged --rm tonistiigi/binfmt --install all`")


# torch 2.15's aarch64 build dies at import (SIGSEGV) under qemu 7.2, Debian 12's; Debian 13's 10.0 runs it.
QEMU_MIN_MAJOR = 9
_VERSION = re.compile(r"version (\d+)\.")


def qemu_major(interpreter: str) -> int | None:
    """The major version a qemu interpreter reports, or None when it is not one that says."""
    # Debian registers a link (aarch64-binfmt-P) that refuses to run outside binfmt; its target answers.
    try:
        shown = subprocess.run([os.path.realpath(interpreter), "--version"], capture_output=True, text=True,
                               timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = _VERSION.search(shown.stdout)
    return int(found.group(1)) if found and "qemu" in shown.stdout.lower() else None


def handler_problem(platform: str, binfmt_dir: Path = BINFMT_DIR,
                    version_of: Callable[[str], int | None] | None = None) -> str:
    """'' when the kernel runs `platform`'s programs through an enabled handler with the F flag (the
    interpreter opened at registration, so it works inside containers) and, for qemu, one new enough
    to run torch; else what is missing."""
    machine = _ELF_MACHINE.get(platform)
    if machine is None:
        return f"pudev knows no emulator for {platform}"
    status = binfmt_dir / "status"
    if not status.exists():
        return f"binfmt_misc is not mounted at {binfmt_dir}"
    try:
        if status.read_text().strip() == "disabled":  # every handler is off (`echo 0 > status`)
            return f"binfmt_misc is disabled ({status} says disabled)"
    except OSError:
        pass
    found_without_f = False
    for entry in sorted(binfmt_dir.iterdir()):
        if entry.name in ("status", "register") or not entry.is_file():
            continue
        try:
            text = entry.read_text()
        except OSError:
            continue
        fields = {key.rstrip(":"): value for key, _, value in (line.partition(" ") for line in text.splitlines()[1:])}
        if not text.startswith("enabled") or machine not in fields.get("magic", "")[36:44]:
            continue
        if "F" not in fields.get("flags", ""):
            found_without_f = True
            continue
        major = (version_of or qemu_major)(fields.get("interpreter", "").strip())
        if major is not None and major < QEMU_MIN_MAJOR:
            return (f"its emulator is qemu {major}, under which torch's aarch64 build crashes at import; "
                    f"qemu {QEMU_MIN_MAJOR} or newer is needed (scripts/host-setup.sh installs Debian 13's)")
        return ""
    if found_without_f:
        return f"the {platform} handler lacks the F flag, so containers cannot reach its interpreter"
    return f"no binfmt handler runs {platform} programs"


def require_runnable(platform: str, command: str, *, binfmt_dir: Path = BINFMT_DIR) -> None:
    """Fail in one line unless this host runs `platform` natively or through an emulator."""
    if platform == native_platform():
        return
    problem = handler_problem(platform, binfmt_dir)
    if problem:
        raise PudevError(f"{command} for {platform} on this {native_platform() or 'unknown'} host: {problem}; "
                         f"{INSTALL_HINT}")
