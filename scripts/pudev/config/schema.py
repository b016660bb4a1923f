"""Field checks for the variant file: which fields each table takes, and what a
valid value looks like. Each failure names the field, so the loader can say
whether the file or a command-line flag put the bad value there."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from pudev.common.errors import PudevError
from pudev.common.halves import SUITE_SCOPES
from pudev.common.imageref import is_image_name, parse_image_ref, reference_hint
from pudev.common.variant import Contract, Variant, every_contract
from pudev.mirror.catalogue import MIRROR_CHOICES


class FieldError(ValueError):
    """A bad field. `fields` are the keys involved, as --set spells them."""

    def __init__(self, message: str, *fields: str) -> None:
        super().__init__(message)
        self.fields = fields


Check = Callable[[Any], str]  # "" when the value is fine, else what is wrong with it


def _matches(pattern: str, expected: str) -> Check:
    compiled = re.compile(pattern)

    def check(value: Any) -> str:
        if isinstance(value, str) and compiled.fullmatch(value):
            return ""
        return f"{value!r} is not {expected}"

    return check


def _image_ref(value: Any) -> str:
    if isinstance(value, str) and parse_image_ref(value) is not None:
        return ""
    hint = reference_hint(value) if isinstance(value, str) else ""
    return (f"{value!r} is not a valid image reference (expected [registry/]name[:tag][@sha256:digest])"
            + (f"; {hint}" if hint else ""))


def _image_name(value: Any) -> str:
    if isinstance(value, str) and is_image_name(value):
        return ""
    return f"{value!r} is not a valid image name (lower-case [registry/]path, no tag)"


def _mirror(value: Any) -> str:
    return "" if value in MIRROR_CHOICES else f"{value!r} is not a mirror (choose {', '.join(MIRROR_CHOICES)})"


def _gcc(value: Any) -> str:
    ok = isinstance(value, int) and not isinstance(value, bool) and 4 <= value <= 99
    return "" if ok else f"{value!r} is not a gcc major version (a whole number such as 11)"


def _two_slots(value: Any) -> str:
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(item, str) and CUDA_VERSION.fullmatch(item) for item in value)
    ):
        return ""
    return f"{value!r} is not two toolkit slots (a list of two CUDA versions such as [\"11.8\", \"12.1\"])"


def _halves(value: Any) -> str:
    if isinstance(value, list) and value and all(item in SUITE_SCOPES for item in value) and \
            len(set(value)) == len(value):
        return ""
    names = ", ".join(f'"{half}"' for half in SUITE_SCOPES)
    return f"{value!r} is not a list of suite halves ({names})"


def _table(value: Any) -> str:
    return "" if isinstance(value, dict) else f"{value!r} is not a table"


PLATFORMS = ("linux/amd64", "linux/arm64")


def require_platform(platform: str, source: str = "--platform") -> None:
    """Where no variant is named (it would name its own platforms): a platform pudev builds at all."""
    if platform and platform not in PLATFORMS:
        raise PudevError(f"{source} {platform}: pudev builds {' and '.join(PLATFORMS)}, each variant for the "
                         "`platforms` it declares (`pudev variants` lists them)")


def _platforms(value: Any) -> str:
    if isinstance(value, list) and value and all(item in PLATFORMS for item in value) and \
            len(set(value)) == len(value):
        return ""
    return f"{value!r} is not a list of platforms ({', '.join(PLATFORMS)}), each named once"


# How a variant that lists no `toolkits` gets its second one (pudev.config.rules.second_toolkit).
SECOND_TOOLKIT_RULES = ("newest-same-major", "listed")


def _second_toolkit(value: Any) -> str:
    return "" if value in SECOND_TOOLKIT_RULES else (
        f"{value!r} is not a rule for the second toolkit: 'newest-same-major' (the newest toolkit of torch's CUDA "
        "major in the catalogue) or 'listed' (every variant lists its toolkits)")


BASE_KINDS = ("official", "wheels")


def _base_kind(value: Any) -> str:
    return "" if value in BASE_KINDS else (f"{value!r} is not a kind of base: 'official' (a PyTorch image with torch) "
                                           "or 'wheels' (an OS or CUDA runtime image; the build adds torch's wheels)")


def _index(value: Any) -> str:
    ok = isinstance(value, str) and (value == "" or re.fullmatch(r"https://[^\s/]+(/\S*)?", value) is not None)
    return "" if ok else f"{value!r} is not a package index (an https:// URL, or \"\" for pip's default)"


CUDA_VERSION = re.compile(r"\d+\.\d+")
ARCH = re.compile(r"(?P<major>\d+)\.(?P<minor>\d+)[af]?(?P<ptx>\+PTX)?")
_ARCH_LIST_TEXT = "a TORCH_CUDA_ARCH_LIST such as 8.0;8.6;9.0+PTX"


def arch_list_problem(value: Any) -> str:
    if isinstance(value, str) and value and all(ARCH.fullmatch(item) for item in value.split(";")):
        return ""
    return f"{value!r} is not {_ARCH_LIST_TEXT}"


def _arch_lists(value: Any) -> str:
    """One list for every toolkit, or a table of lists keyed by toolkit version."""
    if isinstance(value, dict):
        for version, text in value.items():
            if not CUDA_VERSION.fullmatch(version):
                return f"key {version!r} is not a toolkit version (MAJOR.MINOR)"
            problem = arch_list_problem(text)
            if problem:
                return f"for toolkit {version}: {problem}"
        return ""
    return arch_list_problem(value)


_CUDA = _matches(CUDA_VERSION.pattern, "a CUDA version (MAJOR.MINOR, such as 12.1)")
_ARCH_BOUND = _matches(r"\d+\.\d+", "a compute capability (such as 7.5)")
_TORCH = _matches(r"\d+\.\d+\.\d+", "a torch release (such as 2.5.1)")
_PYTHON = _matches(r"3\.\d+", "a Python version (such as 3.11)")
_CXX = _matches(r"c\+\+(17|20|23)", "a C++ standard (c++17, c++20 or c++23)")
_LOCK = _matches(r"[a-z0-9][a-z0-9.-]*", "a lock name (lower-case letters, digits, '.' and '-')")


# How each variant field's value is checked, by field name; a field with none here is checked by
# its contract's pattern (pudev.common.variant), and one with neither fails at import.
CHECKS: dict[str, Check] = {
    "image": _image_name, "platforms": _platforms, "mirror": _mirror, "build_mirror": _mirror,
    "python": _PYTHON, "cxx_standard": _CXX, "cuda_arch_list": _arch_lists, "required_tests": _halves,
    "torch": _TORCH, "cuda": _CUDA, "base_image": _image_ref,
    "build_platform_image": _image_ref, "toolkits": _two_slots, "lock": _LOCK,
    "base": _base_kind, "torch_index": _index,
}


def _check_for(name: str, contract: Contract) -> Check:
    if name in CHECKS:
        return CHECKS[name]
    if contract.pattern:
        return _matches(contract.pattern, contract.expected or f"a match of {contract.pattern}")
    raise TypeError(f"variant field {name!r} goes in the variant file but has no check: give its contract a "
                    "pattern, or add it to CHECKS in pudev.config.schema")


def variant_keys(placement: str, model: type[Variant] = Variant) -> dict[str, tuple[Check, bool]]:
    """The variant file's keys placed `placement` ("shared" or "variant"), with their checks, from the contract."""
    return {name: (_check_for(name, contract), contract.required)
            for name, contract in every_contract(model) if contract.toml == placement}


def per_platform_keys(model: type[Variant] = Variant) -> tuple[str, ...]:
    """What a variant's [on."PLATFORM"] table may set: what differs when the base or the wheels do."""
    return tuple(name for name, contract in every_contract(model) if contract.per_platform)


PER_PLATFORM = per_platform_keys()


class Schema:
    """Which fields each table takes, and how each is checked. True = required."""

    # Allowed at the top as defaults for every variant, and in each variant.
    SHARED: ClassVar[dict[str, tuple[Check, bool]]] = variant_keys("shared")
    TOP: ClassVar[dict[str, tuple[Check, bool]]] = {
        **{key: (check, False) for key, (check, _) in SHARED.items()},
        "default_variant": (_matches(r"[a-z0-9][a-z0-9-]*", "a variant name"), True),
        "second_toolkit": (_second_toolkit, False),
        "toolkits": (_table, True),
        "variants": (_table, True),
    }
    VARIANT: ClassVar[dict[str, tuple[Check, bool]]] = {
        **SHARED,
        **variant_keys("variant"),
        "on": (_table, False),
    }
    # [variants.NAME.on."linux/arm64"]: the facts that may differ on one platform, each optional there.
    ON_PLATFORM: ClassVar[dict[str, tuple[Check, bool]]] = {
        key: (check, False) for key, (check, _) in VARIANT.items() if key in PER_PLATFORM}
    TOOLKIT: ClassVar[dict[str, tuple[Check, bool]]] = {
        "image": (_image_ref, True),
        "max_gcc": (_gcc, True),
        "min_arch": (_ARCH_BOUND, True),
        "max_arch": (_ARCH_BOUND, True),
        "stands_in_for": (_CUDA, False),
        "platforms": (_platforms, False),  # the platforms its image carries; linux/amd64 when not given
    }


def check_table(table: Any, schema: dict[str, tuple[Check, bool]], *, where: str, key_prefix: str = "") -> None:
    """Raise FieldError for an unknown key, a missing required key, or a bad value."""
    if not isinstance(table, dict):
        raise FieldError(f"{where}expected a table, got {table!r}", key_prefix.rstrip("."))
    for key in table:
        if key not in schema:
            raise FieldError(f"{where}unknown field '{key}' (known fields: {', '.join(schema)})", key_prefix + key)
    for key, (check, required) in schema.items():
        if key not in table:
            if required:
                raise FieldError(f"{where}field '{key}' is missing; add it", key_prefix + key)
            continue
        problem = check(table[key])
        if problem:
            raise FieldError(f"{where}field '{key}': {problem}", key_prefix + key)


def check_catalogue(catalogue: dict[str, Any]) -> None:
    for version, entry in catalogue.items():
        if not CUDA_VERSION.fullmatch(version):
            raise FieldError(f"toolkit {version!r}: not a CUDA version (MAJOR.MINOR)", f"toolkit.{version}")
        check_table(entry, Schema.TOOLKIT, where=f"toolkit {version}: ", key_prefix=f"toolkit.{version}.")
