"""Whether this host can run another platform's programs: the kernel's binfmt_misc
handlers, which `docker build --platform` and `docker run --platform` rely on.

Without one, a foreign build fails deep inside its first RUN step with `exec format
error`; checking first turns that into one line that names the fix."""

from __future__ import annotations

from pathlib import Path

from pudev.common.errors import PudevError
from pudev.common.platforms import native_platform

BINFMT_DIR = Path("/proc/sys/fs/binfmt_misc")
# The ELF machine field (e_machine, little-endian) each platform's programs carry, as binfmt's magic shows it.
_ELF_MACHINE = {"linux/arm64": "b700", "linux/amd64": "3e00"}
INSTALL_HINT = ("install an emulator: `sudo apt-get install qemu-user-static binfmt-support` (Debian/Ubuntu), "
                "or `docker run --privileged --rm tonistiigi/binfmt --install all`")


def handler_problem(platform: str, binfmt_dir: Path = BINFMT_DIR) -> str:
    """'' when the kernel runs `platform`'s programs through an enabled handler with the F flag (the
    interpreter opened at registration, so it works inside containers); else what is missing."""
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
        if "F" in fields.get("flags", ""):
            return ""
        found_without_f = True
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
