"""Named override sets in the stand-in file: `--profile local` is the stand-in
build of a variant, declared once and applied through the same overrides a user has."""

from __future__ import annotations

from dataclasses import dataclass

from pudev.common.errors import PudevError
from pudev.common.inputs import InputFile
from pudev.config.overrides import HELP, Override, check_key
from pudev.paths import STANDINS_FILE


@dataclass(frozen=True)
class Profile:
    name: str
    variant: str
    overrides: tuple[Override, ...]


def standins_input() -> InputFile:
    return InputFile(STANDINS_FILE, "stand-in file", "--profile", "restore docker/standins/standins.toml from git")


def profile_names(source: InputFile | None = None) -> list[str]:
    source = source or standins_input()
    return list(source.read_toml().get("profiles", {}))


def load_profile(name: str, source: InputFile | None = None) -> Profile:
    """[profiles.NAME]: the variant it builds plus field overrides (the same keys as --set)."""
    source = source or standins_input()
    profiles = source.read_toml().get("profiles", {})
    if not isinstance(profiles, dict) or name not in profiles:
        valid = ", ".join(profiles) if isinstance(profiles, dict) and profiles else "none"
        raise PudevError(f"--profile {name}: unknown profile; valid profiles are {valid} (in {source.path})")
    table = dict(profiles[name])
    variant = table.pop("variant", None)
    if not isinstance(variant, str):
        raise source.fail(f"profile {name}: field 'variant' is missing")
    origin = f"profile {name} ({source.path.name})"
    for key in table:
        if not check_key(key):
            raise source.fail(f"profile {name}: unknown key '{key}' ({HELP})")
    return Profile(name, variant, tuple(Override(key, value, origin) for key, value in table.items()))
