"""Load docker/variants.toml once, validate it as declared, then apply per-run
overrides. An error in the file names the file; an error an override causes
names the flag (or profile) that made it."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pudev.common.errors import PudevError
from pudev.common.inputs import InputFile
from pudev.common.platforms import native_platform
from pudev.common.variant import declared_fields
from pudev.config import rules
from pudev.config.model import Matrix, Toolkit, Variant
from pudev.config.overrides import TOOLKIT_KEY, Override
from pudev.config.schema import FieldError, Schema, check_catalogue, check_table
from pudev.paths import VARIANTS_FILE

# The variant fields docker/variants.toml may set, each passed to Variant under its own name.
FILE_FIELDS = frozenset(name for name, contract in declared_fields() if contract.toml)

Overrides = Mapping[str, Sequence[Override]]  # variant name -> its overrides, applied in order


def variants_input(path: Path | None = None, *, source: str = "") -> InputFile:
    chosen = path or VARIANTS_FILE
    return InputFile(chosen, "variant file", source or ("--variants-file" if path else "the default of "
                                                                                          "--variants-file"),
                     "pass the matrix file (docker/variants.toml) to --variants-file")


@dataclass(frozen=True)
class VariantFile:
    """The variant file, read once; matrices are built from it as often as needed."""

    source: InputFile
    raw: dict[str, Any]

    @functools.cached_property
    def declared(self) -> Matrix:
        """The matrix as the file declares it, every variant on every platform, built and validated once."""
        return _build(self.source, self.raw, {})

    def with_overrides(self, overrides: Overrides, platform: str = "", *, every_platform: bool = False) -> Matrix:
        """Validated as declared first (the file's own errors name the file), then overridden. The
        overridden variants are built for `platform`, else the one a plain build builds, or with
        `every_platform` for each of theirs (a profile names images for every platform)."""
        declared = self.declared
        if not overrides:
            return declared
        for name, changes in overrides.items():
            # An unknown name fails here, listing the valid ones; so does a platform it is not built for,
            # unless these very overrides give it new platforms.
            declared.on(name, "" if any(change.key == "platforms" for change in changes) else platform)
        return _build(self.source, self.raw, overrides, platform, every_platform=every_platform)


def read_variant_file(source: InputFile | Path) -> VariantFile:
    source = source if isinstance(source, InputFile) else variants_input(source)
    return VariantFile(source, source.read_toml())


def load_matrix(source: InputFile | Path, overrides: Overrides | None = None) -> Matrix:
    """Read, validate as declared, then apply `overrides` to the variants they name."""
    return read_variant_file(source).with_overrides(overrides or {})


def _build(source: InputFile, raw: dict[str, Any], overrides: Overrides, only_platform: str = "", *,
           every_platform: bool = False) -> Matrix:
    try:
        check_table(raw, Schema.TOP, where="")
        check_catalogue(raw["toolkits"])
        if not raw["variants"]:
            raise FieldError("field 'variants': declares no variant; add a [variants.NAME] table", "variants")
        if raw["default_variant"] not in raw["variants"]:
            raise FieldError(f"field 'default_variant': '{raw['default_variant']}' is not a declared variant "
                             f"({', '.join(raw['variants'])})", "default_variant")
    except FieldError as error:
        raise _in_file(source, error) from None
    builds: dict[str, dict[str, Variant]] = {}
    for name, table in raw["variants"].items():
        changes = list(overrides.get(name, ()))
        try:
            platforms = _platforms_of(name, raw, table, changes)
            default = native_platform() if native_platform() in platforms else platforms[0]
            chosen = [only_platform or default] if changes and not every_platform else platforms
            builds[name] = {platform: _variant(name, raw, table, changes, platform) for platform in chosen}
        except FieldError as error:
            culprit = _culprit(error, changes)
            if culprit is None:
                raise _in_file(source, error) from None
            raise PudevError(f"{culprit.source}: {error} (variant {name} of {source.path})") from None
    # A command that names no platform works on this host's where the variant is built for it.
    native = native_platform()
    variants = {name: found.get(native) or next(iter(found.values())) for name, found in builds.items()}
    return Matrix(path=source.path, default_variant=raw["default_variant"], variants=variants, builds=builds)


def _on_platform(error: FieldError, where: str) -> FieldError:
    """The rules name the variant alone; on a variant built for several platforms, say which build broke them."""
    text = str(error)
    if " on " in where and where.strip(": ") not in text:
        text = text.replace(where.split(" on ")[0] + ":", where.rstrip(": ") + ":", 1)
    return FieldError(text, *error.fields)


def _declared_platforms(raw: dict[str, Any], table: dict[str, Any]) -> list[str]:
    return list(table.get("platforms") or raw.get("platforms") or [])


def _in_file(source: InputFile, error: FieldError) -> PudevError:
    return PudevError(f"{source.path} ({source.what}, from {source.source}): {error}")


def _culprit(error: FieldError, changes: list[Override]) -> Override | None:
    """The last override that set one of the fields the error is about."""
    involved = set(error.fields)
    for change in reversed(changes):
        if change.key in involved or any(field.startswith(change.key + ".") for field in involved):
            return change
    return None


def _platforms_of(name: str, raw: dict[str, Any], table: Any, changes: list[Override]) -> list[str]:
    """The platforms a variant is built for (an override may narrow or widen them), each per-platform
    table checked against what the file declares."""
    where = f"variant {name}: "
    if not isinstance(table, dict):
        raise FieldError(f"{where}expected a table, got {table!r}", "variants")
    fields = {"platforms": raw.get("platforms"), **table}
    check_table({key: fields[key] for key in ("platforms", "on") if fields.get(key) is not None},
                {"platforms": Schema.VARIANT["platforms"], "on": Schema.VARIANT["on"]}, where=where)
    if fields.get("platforms") is None:
        raise FieldError(f"{where}field 'platforms' is missing; add it (such as [\"linux/amd64\"])", "platforms")
    declared: list[str] = fields["platforms"]
    for platform, facts in fields.get("on", {}).items():
        if platform not in declared:
            raise FieldError(f"{where}table 'on.\"{platform}\"': {platform} is not one of the variant's platforms "
                             f"({', '.join(declared)}); add it to `platforms` or drop the table", "platforms")
        check_table(facts, Schema.ON_PLATFORM, where=f"{where}on {platform}: ")
    platforms = declared
    for change in changes:
        if change.key == "platforms":
            check_table({"platforms": change.value}, {"platforms": Schema.VARIANT["platforms"]}, where=where)
            platforms = change.value
    return platforms


def _variant(name: str, raw: dict[str, Any], table: dict[str, Any], changes: list[Override],
             platform: str) -> Variant:
    """The variant built for `platform`: shared fields, its own, that platform's table, then the overrides."""
    where = f"variant {name} on {platform}: " if len(_declared_platforms(raw, table)) > 1 else f"variant {name}: "
    fields = {key: copy.deepcopy(value) for key, value in raw.items() if key in Schema.SHARED}
    fields.update(copy.deepcopy({key: value for key, value in table.items() if key != "on"}))
    fields.update(copy.deepcopy(table.get("on", {}).get(platform, {})))
    catalogue: dict[str, Any] = copy.deepcopy(raw["toolkits"])
    for change in (change for change in changes if change.platform in ("", platform)):
        toolkit = TOOLKIT_KEY.fullmatch(change.key)
        if toolkit:
            catalogue.setdefault(toolkit["version"], {})[toolkit["field"]] = change.value
        else:
            fields[change.key] = change.value
    check_table(fields, Schema.VARIANT, where=where)
    if "toolkits" not in fields:
        try:
            fields["toolkits"] = rules.second_toolkit(name, fields["cuda"], catalogue,
                                                      raw.get("second_toolkit", "listed"))
        except FieldError as error:
            raise _on_platform(error, where) from None
    versions: list[str] = fields["toolkits"]
    for version in versions:
        if version not in catalogue:
            raise FieldError(f"{where}field 'toolkits': CUDA {version} has no toolkit entry; add "
                             f"[toolkits.\"{version}\"] with its image, max_gcc, min_arch and max_arch",
                             "toolkits")
        check_table(catalogue[version], Schema.TOOLKIT, where=f"toolkit {version}: ",
                    key_prefix=f"toolkit.{version}.")
        carried = catalogue[version].get("platforms", ["linux/amd64"])
        if platform not in carried:
            raise FieldError(f"{where}toolkit {version}'s image is for {', '.join(carried)} only; give it a {platform} "
                             f"image (NVIDIA's multi-arch devel tags carry linux/arm64 as sbsa) and list {platform} in "
                             f"[toolkits.\"{version}\"] platforms", f"toolkit.{version}.platforms", "platforms")
    provides = {version: catalogue[version].get("stands_in_for") or version for version in versions}
    try:
        arch_lists = rules.arch_lists_by_toolkit(name, fields["cuda_arch_list"], provides)
    except FieldError as error:
        raise _on_platform(error, where) from None
    toolkits = tuple(
        Toolkit(version=version, image=catalogue[version]["image"], max_gcc=catalogue[version]["max_gcc"],
                min_arch=catalogue[version]["min_arch"], max_arch=catalogue[version]["max_arch"],
                arch_list=arch_lists[version], stands_in_for=catalogue[version].get("stands_in_for", ""),
                platforms=tuple(catalogue[version].get("platforms", ["linux/amd64"])))
        for version in versions
    )
    # Every field the file may set comes through under its own name (pudev.common.variant); the rest is
    # what the loader knows: the name, the platform, the toolkit slots and the defaults that depend on others.
    declared = {key: tuple(value) if isinstance(value, list) else value
                for key, value in fields.items() if key in FILE_FIELDS}
    variant = Variant(**{
        **declared, "name": name, "platform": platform, "toolkits": toolkits, "latest": name == raw["default_variant"],
        "build_mirror": fields.get("build_mirror") or fields["mirror"],
        "build_platform_image": fields.get("build_platform_image") or fields["base_image"],
        "lock": fields.get("lock") or rules.default_lock(fields["torch"], fields["python"], platform),
    })
    try:
        rules.check_variant(variant)
    except FieldError as error:
        raise _on_platform(error, where) from None
    return variant
