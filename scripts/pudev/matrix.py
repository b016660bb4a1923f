"""The variant matrix: docker/variants.toml loaded, overridden and validated.

Everything else (plan, Makefile targets, tags, CI matrix, bake file, the image's
own record) is derived from the objects returned here.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pudev.common.errors import PudevError
from pudev.validation import FieldError, Schema, check_table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 hosts only
    import tomli as tomllib


@dataclass(frozen=True)
class Toolkit:
    """One CUDA toolkit a slot can hold: where it comes from and what nvcc accepts."""

    version: str
    image: str
    max_gcc: int


@dataclass(frozen=True)
class Variant:
    name: str
    torch: str
    cuda: str
    base_image: str
    toolkits: tuple[Toolkit, ...]
    default_toolkit: str
    # Settings shared by all variants, carried here so a variant is self-contained.
    image: str
    python: str
    platform: str
    mirror: str
    build_mirror: str
    cuda_arch_list: str

    @property
    def toolkit_versions(self) -> tuple[str, ...]:
        return tuple(toolkit.version for toolkit in self.toolkits)


@dataclass(frozen=True)
class Matrix:
    path: Path
    default_variant: str
    variants: dict[str, Variant]

    def get(self, name: str) -> Variant:
        if name not in self.variants:
            valid = ", ".join(self.variants)
            raise PudevError(f"unknown variant '{name}': valid variants are {valid} (see `pudev variants`)")
        return self.variants[name]


def read_raw(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise PudevError(f"{path}: variant file not found; pass --variants PATH or run from the repo") from None
    except tomllib.TOMLDecodeError as error:
        raise PudevError(f"{path}: not valid TOML ({error}); fix the syntax") from None


def load_matrix(path: Path, overrides: dict[str, dict[str, Any]] | None = None) -> Matrix:
    """Load and validate every variant. `overrides` maps variant name -> raw field changes."""
    raw = read_raw(path)
    try:
        return _build(path, raw, overrides or {})
    except FieldError as error:
        raise PudevError(f"{path}: {error}") from None


def _build(path: Path, raw: dict[str, Any], overrides: dict[str, dict[str, Any]]) -> Matrix:
    check_table(raw, Schema.TOP, where="")
    catalogue_raw = raw["toolkits"]
    variants_raw = raw["variants"]
    if not variants_raw:
        raise FieldError("field 'variants': declares no variant; add a [variants.NAME] table")
    unknown = set(overrides) - set(variants_raw)
    if unknown:
        name = sorted(unknown)[0]
        raise FieldError(f"override for unknown variant '{name}': valid variants are {', '.join(variants_raw)}")
    if raw["default_variant"] not in variants_raw:
        raise FieldError(
            f"field 'default_variant': '{raw['default_variant']}' is not a declared variant "
            f"({', '.join(variants_raw)})"
        )
    variants = {}
    for name, fields in variants_raw.items():
        merged = {key: value for key, value in raw.items() if key in Schema.SHARED}
        merged.update(copy.deepcopy(fields))
        catalogue = copy.deepcopy(catalogue_raw)
        for key, value in overrides.get(name, {}).items():
            if key.startswith("toolkit."):
                version, field = key.removeprefix("toolkit.").rsplit(".", 1)
                catalogue.setdefault(version, {})[field] = value
            else:
                merged[key] = value
        variants[name] = _variant(name, merged, catalogue)
    return Matrix(path=path, default_variant=raw["default_variant"], variants=variants)


def _variant(name: str, fields: dict[str, Any], catalogue: dict[str, Any]) -> Variant:
    where = f"variant {name}: "
    check_table(fields, Schema.VARIANT, where=where)
    check_table(catalogue, Schema.CATALOGUE, where="")
    slots = []
    for version in fields["toolkits"]:
        if version not in catalogue:
            raise FieldError(
                f"{where}field 'toolkits': CUDA {version} has no toolkit entry; "
                f"add [toolkits.\"{version}\"] with its image and max_gcc"
            )
        entry = catalogue[version]
        check_table(entry, Schema.TOOLKIT, where=f"toolkit {version}: ")
        slots.append(Toolkit(version=version, image=entry["image"], max_gcc=entry["max_gcc"]))
    if len(set(fields["toolkits"])) != len(fields["toolkits"]):
        raise FieldError(f"{where}field 'toolkits': lists a toolkit twice; give each slot its own version")
    if fields["default_toolkit"] not in fields["toolkits"]:
        raise FieldError(
            f"{where}field 'default_toolkit': {fields['default_toolkit']} is not one of the "
            f"variant's toolkits ({', '.join(fields['toolkits'])})"
        )
    if fields["default_toolkit"].split(".")[0] != fields["cuda"].split(".")[0]:
        raise FieldError(
            f"{where}field 'default_toolkit': {fields['default_toolkit']} does not match torch's CUDA "
            f"{fields['cuda']} in its major version; torch refuses to build extensions against it"
        )
    return Variant(
        name=name,
        torch=fields["torch"],
        cuda=fields["cuda"],
        base_image=fields["base_image"],
        toolkits=tuple(slots),
        default_toolkit=fields["default_toolkit"],
        image=fields["image"],
        python=fields["python"],
        platform=fields["platform"],
        mirror=fields["mirror"],
        build_mirror=fields.get("build_mirror") or fields["mirror"],
        cuda_arch_list=fields["cuda_arch_list"],
    )
