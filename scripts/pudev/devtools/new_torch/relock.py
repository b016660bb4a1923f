"""The locks of a move: `pudev lock` run on the scratch copy for each moved build and the newest line's
stand-in profile on each platform, as a maintainer would run it by hand. Each new lock starts from the
one it replaces, so uv keeps every pin that need not move and the pull request shows only what did;
a lock nothing uses any more is removed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import tomllib

from pudev.config.model import Matrix
from pudev.devtools.new_torch.readiness import Plan
from pudev.devtools.new_torch.transaction import pudev_in

STANDINS = "docker/standins/standins.toml"


def relock(copy: Path, old: Matrix, new: Matrix, plan: Plan, *, old_standins: str, without_base: bool) -> None:
    """`pudev lock` for each moved build and the newest line's profile on each platform, each new lock started
    from the one it replaces (so only what moved changes); locks nothing uses any more removed."""
    moved = plan.named("ready")
    old_profiles = tomllib.loads(old_standins).get("profiles", {})
    profiles = tomllib.loads((copy / STANDINS).read_text()).get("profiles", {})
    seeds = {_lock_of(old_profiles, place): _lock_of(profiles, place) for place in _lock_places(old_profiles)}
    for name in moved:
        for platform, build in new.builds[name].items():
            was = old.builds.get(name, {}).get(platform) or old.builds[plan.latest_before].get(platform)
            if was:
                seeds.setdefault(was.lock, build.lock)
    locks = copy / "requirements/lock"
    for seed, target in seeds.items():
        if target and not (locks / f"{target}.txt").exists() and (locks / f"{seed}.txt").exists():
            shutil.copyfile(locks / f"{seed}.txt", locks / f"{target}.txt")
    flag = ["--without-base"] if without_base else []
    for platform in sorted({p for name in moved for p in new.builds[name]}):
        pudev_in(copy, "lock", *[name for name in moved if platform in new.builds[name]], "--platform", platform,
                 *flag)
    line = {decision.variant for decision in plan.decisions}
    for profile, table in profiles.items():
        if table.get("variant") in line:
            for platform in new.variants[table["variant"]].platforms:
                pudev_in(copy, "lock", "--profile", profile, "--platform", platform, *flag)
    used = {build.lock for build in new.every_build()} | {"build-tools"} | _profile_locks(profiles)
    for name in ({build.lock for build in old.every_build()} | _profile_locks(old_profiles)) - used:
        (locks / f"{name}.txt").unlink(missing_ok=True)


def _lock_places(profiles: dict[str, Any]) -> list[tuple[str, str]]:
    """(profile, platform or "") of every lock a profile names."""
    return [(name, platform) for name, table in profiles.items()
            for platform, facts in (("", table), *table.get("on", {}).items()) if "lock" in facts]


def _lock_of(profiles: dict[str, Any], place: tuple[str, str]) -> str:
    name, platform = place
    table = profiles.get(name, {})
    return str((table.get("on", {}).get(platform, {}) if platform else table).get("lock", ""))


def _profile_locks(profiles: dict[str, Any]) -> set[str]:
    return {str(facts["lock"]) for table in profiles.values()
            for facts in (table, *table.get("on", {}).values()) if "lock" in facts}
