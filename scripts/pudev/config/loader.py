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
from pudev.common.halves import SUITE_HALVES
from pudev.common.inputs import InputFile
from pudev.config import rules
from pudev.config.model import Matrix, Toolkit, Variant
from pudev.config.overrides import TOOLKIT_KEY, Override
from pudev.config.schema import FieldError, Schema, check_catalogue, check_table
from pudev.paths import VARIANTS_FILE

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
        """The matrix as the file declares it, built and validated once per command."""
        return _build(self.source, self.raw, {})

    def with_overrides(self, overrides: Overrides) -> Matrix:
        """Validated as declared first (the file's own errors name the file), then overridden."""
        declared = self.declared
        if not overrides:
            return declared
        for name in overrides:
            declared.get(name)  # an unknown name fails here, listing the valid ones
        return _build(self.source, self.raw, overrides)


def read_variant_file(source: InputFile | Path) -> VariantFile:
    source = source if isinstance(source, InputFile) else variants_input(source)
    return VariantFile(source, source.read_toml())


def load_matrix(source: InputFile | Path, overrides: Overrides | None = None) -> Matrix:
    """Read, validate as declared, then apply `overrides` to the variants they name."""
    return read_variant_file(source).with_overrides(overrides or {})


def _build(source: InputFile, raw: dict[str, Any], overrides: Overrides) -> Matrix:
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
    variants = {}
    for name, table in raw["variants"].items():
        changes = list(overrides.get(name, ()))
        try:
            variants[name] = _variant(name, raw, table, changes)
        except FieldError as error:
            culprit = _culprit(error, changes)
            if culprit is None:
                raise _in_file(source, error) from None
            raise PudevError(f"{culprit.source}: {error} (variant {name} of {source.path})") from None
    return Matrix(path=source.path, default_variant=raw["default_variant"], variants=variants)


def _in_file(source: InputFile, error: FieldError) -> PudevError:
    return PudevError(f"{source.path} ({source.what}, from {source.source}): {error}")


def _culprit(error: FieldError, changes: list[Override]) -> Override | None:
    """The last override that set one of the fields the error is about."""
    involved = set(error.fields)
    for change in reversed(changes):
        if change.key in involved or any(field.startswith(change.key + ".") for field in involved):
            return change
    return None


def _variant(name: str, raw: dict[str, Any], table: Any, changes: list[Override]) -> Variant:
    where = f"variant {name}: "
    if not isinstance(table, dict):
        raise FieldError(f"{where}expected a table, got {table!r}", "variants")
    fields = {key: copy.deepcopy(value) for key, value in raw.items() if key in Schema.SHARED}
    fields.update(copy.deepcopy(table))
    catalogue: dict[str, Any] = copy.deepcopy(raw["toolkits"])
    for change in changes:
        toolkit = TOOLKIT_KEY.fullmatch(change.key)
        if toolkit:
            catalogue.setdefault(toolkit["version"], {})[toolkit["field"]] = change.value
        else:
            fields[change.key] = change.value
    check_table(fields, Schema.VARIANT, where=where)
    versions: list[str] = fields["toolkits"]
    for version in versions:
        if version not in catalogue:
            raise FieldError(f"{where}field 'toolkits': CUDA {version} has no toolkit entry; add "
                             f"[toolkits.\"{version}\"] with its image, max_gcc, min_arch and max_arch",
                             "toolkits")
        check_table(catalogue[version], Schema.TOOLKIT, where=f"toolkit {version}: ",
                    key_prefix=f"toolkit.{version}.")
    provides = {version: catalogue[version].get("stands_in_for") or version for version in versions}
    arch_lists = rules.arch_lists_by_toolkit(name, fields["cuda_arch_list"], provides)
    toolkits = tuple(
        Toolkit(version=version, image=catalogue[version]["image"], max_gcc=catalogue[version]["max_gcc"],
                min_arch=catalogue[version]["min_arch"], max_arch=catalogue[version]["max_arch"],
                arch_list=arch_lists[version], stands_in_for=catalogue[version].get("stands_in_for", ""))
        for version in versions
    )
    variant = Variant(
        name=name, torch=fields["torch"], cuda=fields["cuda"], python=fields["python"],
        cxx_standard=fields["cxx_standard"], base_image=fields["base_image"], toolkits=toolkits,
        image=fields["image"], platform=fields["platform"], mirror=fields["mirror"],
        build_mirror=fields.get("build_mirror") or fields["mirror"],
        lock=fields.get("lock") or rules.default_lock(fields["torch"], fields["python"], fields["platform"]),
        required_tests=tuple(fields.get("required_tests") or SUITE_HALVES),
    )
    rules.check_variant(variant)
    return variant
