"""Which variants a command works on, with what changes: the variant file loaded
once, the profile and the flags' overrides applied, pull mirrors rewritten."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.config.loader import read_variant_file, variants_input
from pudev.config.model import Matrix, Variant
from pudev.config.overrides import TOOLKIT_KEY, Override
from pudev.config.profiles import Profile, load_profile
from pudev.config.schema import require_platform


@dataclass(frozen=True)
class Selection:
    """What the command line asked for, before anything is read."""

    names: tuple[str, ...] = ()
    variants_file: Path | None = None  # None: docker/variants.toml
    profile: str = ""
    platform: str = ""  # --platform ("": this host's where the variant is built for it, else its first)
    overrides: tuple[Override, ...] = ()
    pull_mirror: str = ""


@dataclass(frozen=True)
class Selected:
    matrix: Matrix
    variants: tuple[Variant, ...]


def resolve(selection: Selection, *, require_names: bool = True) -> Selected:
    names = list(selection.names)
    overrides = list(selection.overrides)
    platform = selection.platform
    _require_one_value_per_field(overrides)
    if selection.profile:
        profile = load_profile(selection.profile)
        if names and names != [profile.variant]:
            # Its bases stand in for that variant alone: another name would build on them and claim otherwise.
            raise PudevError(f"--profile {profile.name} builds {profile.variant} (its stand-in bases); name "
                             f"{profile.variant} or no variant, or drop --profile to build {', '.join(names)}")
        names = [profile.variant]
        _require_agreement(profile, overrides)
        overrides = [*profile.overrides, *overrides]
    variant_file = read_variant_file(variants_input(selection.variants_file))  # read once
    declared = variant_file.declared
    if names == ["all"]:
        names = list(declared.variants)
    if not names and require_names:
        raise PudevError(f"name a variant: {', '.join(declared.variants)} (or `all`)")
    if not names:
        require_platform(platform)
    for name in names:
        # Unknown names or platforms fail here, listing the valid ones (a --set platforms=... may add one).
        declared.on(name, "" if any(change.key == "platforms" for change in overrides) else platform)
    if selection.overrides and not names:  # a whole-matrix command (variants, matrix, bake, lock): flags change all
        names = list(declared.variants)
    # A profile is made for every platform its variant is built for; flags alone change one build.
    matrix = variant_file.with_overrides({name: overrides for name in names}, platform,
                                         every_platform=bool(selection.profile)) if overrides else declared
    if selection.profile:
        matrix = _never_latest(matrix, names)
    variants = [matrix.on(name, platform) for name in names]
    for override in overrides:
        _require_a_toolkit_for(override, variants)
    _require_a_base_for_python(list(selection.overrides), declared, names)
    if selection.pull_mirror:
        variants = [through_pull_mirror(variant, selection.pull_mirror) for variant in variants]
        matrix = dataclasses.replace(matrix, variants={**matrix.variants, **{v.name: v for v in variants}})
    return Selected(matrix, tuple(variants))


def _require_one_value_per_field(flags: list[Override]) -> None:
    """Two flags that set one field (--base-image X --set base_image=Y) leave no answer to which one counts."""
    seen: dict[str, Override] = {}
    for flag in flags:
        if flag.key in seen:
            raise PudevError(f"{seen[flag.key].source} and {flag.source} both set {flag.key}; give it once")
        seen[flag.key] = flag


def _require_agreement(profile: Profile, flags: list[Override]) -> None:
    """A flag may repeat what the profile stands in with (bases, torch, Python, toolkits), never change it:
    the build would no longer be that stand-in, and its image's record would say so wrongly. Where it goes
    (image, lock) and how it is tested may change: the record states those as they were used."""
    for flag in flags:
        for own in profile.overrides:
            if own.key == flag.key and own.value != flag.value and _describes_content(flag.key):
                raise PudevError(f"{flag.source}: --profile {profile.name} sets {flag.key} to {own.value}; drop the "
                                 "flag, or drop --profile and give every override yourself")


def _describes_content(key: str) -> bool:
    return key in ("base_image", "torch", "python", "cuda", "toolkits") or bool(TOOLKIT_KEY.fullmatch(key))


def _never_latest(matrix: Matrix, names: list[str]) -> Matrix:
    """A stand-in profile's builds never carry `latest`, whichever variant they stand in for."""
    builds = {name: {platform: dataclasses.replace(build, latest=False) for platform, build in found.items()}
              if name in names else found for name, found in matrix.builds.items()}
    variants = {name: dataclasses.replace(variant, latest=False) if name in names else variant
                for name, variant in matrix.variants.items()}
    return dataclasses.replace(matrix, variants=variants, builds=builds)


def profile_builds(name: str) -> list[Variant]:
    """The builds a stand-in profile makes: its variant on each platform, with its overrides applied."""
    selected = resolve(Selection(profile=name))
    return list(selected.matrix.builds[selected.variants[0].name].values())


def _require_a_toolkit_for(override: Override, variants: list[Variant]) -> None:
    """A toolkit override that no chosen variant uses would change nothing: say so instead of ignoring it."""
    toolkit = TOOLKIT_KEY.fullmatch(override.key)
    if toolkit is None or any(toolkit["version"] in variant.toolkit_versions for variant in variants):
        return
    have = "; ".join(f"{variant.name} has {', '.join(variant.toolkit_versions)}" for variant in variants)
    raise PudevError(f"{override.source}: no chosen variant uses CUDA {toolkit['version']} ({have}); name one of "
                     f"their toolkits, or add {toolkit['version']} to a variant with --set toolkits=...")


def _require_a_base_for_python(flags: list[Override], declared: Matrix, names: list[str]) -> None:
    """A variant's Python is the one its base image ships: a flag that changes the Python alone would be
    blamed later on a lock that no command could make."""
    python = next((flag for flag in flags if flag.key == "python"), None)
    if python is None or any(flag.key == "base_image" for flag in flags):
        return
    shipped = "; ".join(f"{name}: Python {declared.get(name).python} from {declared.get(name).base_image}"
                        for name in names)
    raise PudevError(f"{python.source}: the Python is the one the base image ships ({shipped}); to build for "
                     f"Python {python.value}, also pass --base-image with an image that has it, then make its lock "
                     f"with `pudev lock VARIANT {python.source} --base-image IMAGE`")


def through_pull_mirror(variant: Variant, prefix: str) -> Variant:
    """Base and toolkit images pulled through `prefix` (a registry mirror or pull-through proxy)."""
    toolkits = tuple(dataclasses.replace(t, image=with_pull_mirror(t.image, prefix)) for t in variant.toolkits)
    return dataclasses.replace(variant, base_image=with_pull_mirror(variant.base_image, prefix), toolkits=toolkits)


def with_pull_mirror(reference: str, prefix: str) -> str:
    """docker.io/pytorch/pytorch:x -> PREFIX/pytorch/pytorch:x (official images keep library/)."""
    ref = parse_image_ref(reference)
    mirror = parse_image_ref(prefix.rstrip("/") + "/x")
    if ref is None or mirror is None or not mirror.domain:
        raise PudevError(f"--pull-mirror {prefix}: not a registry; write HOST[/PATH], e.g. registry.example.cn/mirror")
    if ref.domain and ref.domain not in ("docker.io", "index.docker.io"):
        raise PudevError(f"--pull-mirror {prefix}: only Docker Hub images are mirrored, and {reference} comes from "
                         f"{ref.domain}; drop --pull-mirror or use --base-image / --toolkit-image")
    path = ref.path if "/" in ref.path else f"library/{ref.path}"
    suffix = (f":{ref.tag}" if ref.tag else "") + (f"@{ref.digest}" if ref.digest else "")
    return f"{prefix.rstrip('/')}/{path}{suffix}"
