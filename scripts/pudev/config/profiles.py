"""Named override sets in the stand-in file: `--profile local` is the stand-in
build of a variant, declared once and applied through the same overrides a user has."""

from __future__ import annotations

from dataclasses import dataclass

from pudev.common.errors import PudevError
from pudev.common.inputs import InputFile
from pudev.config.overrides import HELP, Override, check_key
from pudev.config.schema import PLATFORMS
from pudev.paths import STANDINS_FILE


@dataclass(frozen=True)
class Profile:
    name: str
    variant: str
    overrides: tuple[Override, ...]  # some for one platform's build alone (Override.platform)


def standins_input() -> InputFile:
    return InputFile(STANDINS_FILE, "stand-in file", "--profile", "restore docker/standins/standins.toml from git")


def profile_names(source: InputFile | None = None) -> list[str]:
    source = source or standins_input()
    return list(source.read_toml().get("profiles", {}))


def load_profile(name: str, source: InputFile | None = None) -> Profile:
    """[profiles.NAME]: the variant it builds plus field overrides (the same keys as --set), and in
    [profiles.NAME.on."PLATFORM"] those that change that platform's build alone."""
    source = source or standins_input()
    profiles = source.read_toml().get("profiles", {})
    if not isinstance(profiles, dict) or name not in profiles:
        valid = ", ".join(profiles) if isinstance(profiles, dict) and profiles else "none"
        raise PudevError(f"--profile {name}: unknown profile; valid profiles are {valid} (in {source.path})")
    table = dict(profiles[name])
    variant = table.pop("variant", None)
    if not isinstance(variant, str):
        raise source.fail(f"profile {name}: field 'variant' is missing")
    per_platform = table.pop("on", {})
    origin = f"profile {name} ({source.path.name})"
    overrides = _overrides(name, table, origin, "", source)
    for platform, changes in per_platform.items() if isinstance(per_platform, dict) else ():
        if platform not in PLATFORMS or not isinstance(changes, dict):
            raise source.fail(f"profile {name}: table 'on.\"{platform}\"' is not a platform's table (platforms: "
                              f"{', '.join(PLATFORMS)})")
        overrides += _overrides(name, changes, f"profile {name} on {platform} ({source.path.name})", platform, source)
    return Profile(name, variant, tuple(overrides))


def _overrides(name: str, table: dict[str, object], origin: str, platform: str, source: InputFile) -> list[Override]:
    for key in table:
        if not check_key(key):
            raise source.fail(f"profile {name}: unknown key '{key}' ({HELP})")
    return [Override(key, value, origin, platform) for key, value in table.items()]
