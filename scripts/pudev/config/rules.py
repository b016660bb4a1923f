"""Rules between a variant's fields, checked when the matrix loads (never
discovered later, at build or tagging time)."""

from __future__ import annotations

from typing import Any

from pudev.common.versions import release
from pudev.config.model import Toolkit, Variant
from pudev.config.schema import ARCH, FieldError

PLATFORM_SUFFIX = {"linux/amd64": "", "linux/arm64": "-arm64"}


def default_lock(torch: str, python: str, platform: str) -> str:
    """Variants whose lock inputs match (torch's base packages, Python, platform) share one lock file."""
    return f"torch{torch}-py{python}{PLATFORM_SUFFIX.get(platform, '')}"


def second_toolkit(name: str, cuda: str, catalogue: dict[str, Any], rule: str) -> list[str]:
    """The toolkits of a variant that lists none: torch's own CUDA and, by the matrix's `second_toolkit`
    rule, the newest other toolkit of the same major in the catalogue (torch's extension builder only
    warns on a minor mismatch), in release order."""
    if rule != "newest-same-major":
        raise FieldError(f"variant {name}: field 'toolkits' is missing, and the matrix's second_toolkit rule is "
                         f"'{rule}'; list the variant's two toolkits, such as toolkits = [\"{cuda}\", \"X.Y\"]",
                         "toolkits")
    major = cuda.split(".")[0]
    others = [version for version in catalogue if version.split(".")[0] == major and version != cuda]
    if not others:
        raise FieldError(f"variant {name}: second_toolkit 'newest-same-major' finds no other {major}.x toolkit than "
                         f"torch's CUDA {cuda} in [toolkits]; add one, or list the variant's `toolkits`", "toolkits")
    return sorted([cuda, max(others, key=release)], key=release)


def arch_lists_by_toolkit(name: str, value: str | dict[str, str], provides: dict[str, str]) -> dict[str, str]:
    """`cuda_arch_list` is one list for every toolkit, or a table with one list per toolkit, keyed by
    its version or by the release it stands in for (so a stand-in takes over the slot's list)."""
    versions = list(provides)
    if isinstance(value, str):
        return dict.fromkeys(versions, value)
    lists, missing = {}, []
    for version in versions:
        key = version if version in value else provides[version]
        if key in value:
            lists[version] = value[key]
        else:
            missing.append(version)
    extra = [key for key in value if key not in versions and key not in provides.values()]
    if missing or extra:
        problem = (f"has no list for toolkit {', '.join(missing)}" if missing
                   else f"lists toolkit {', '.join(extra)}, which the variant does not hold")
        raise FieldError(f"variant {name}: field 'cuda_arch_list' {problem}; give one list per toolkit "
                         f"({', '.join(versions)})", "cuda_arch_list", "toolkits")
    return lists


def _capability(text: str) -> tuple[int, int]:
    match = ARCH.fullmatch(text)
    assert match is not None  # the schema checked the syntax
    return int(match["major"]), int(match["minor"])


def unsupported_archs(toolkit: Toolkit) -> list[str]:
    """Entries of the toolkit's arch list its nvcc cannot compile for."""
    low, high = _capability(toolkit.min_arch), _capability(toolkit.max_arch)
    return [arch.removesuffix("+PTX") for arch in toolkit.arch_list.split(";") if not low <= _capability(arch) <= high]


def check_variant(variant: Variant) -> None:
    where = f"variant {variant.name}: "
    versions = variant.toolkit_versions
    if len(set(versions)) != len(versions):
        raise FieldError(f"{where}field 'toolkits': lists a toolkit twice; give each slot its own version",
                         "toolkits")
    if variant.name != variant.cuda_tag:
        raise FieldError(f"{where}the name must be {variant.cuda_tag}, the tag torch's CUDA {variant.cuda} gives "
                         f"every published image; rename [variants.{variant.name}] or fix field 'cuda'", "cuda")
    for toolkit in variant.toolkits:
        _check_toolkit(where, toolkit)
    providers = [toolkit for toolkit in variant.toolkits if toolkit.provides == variant.cuda]
    if len(providers) != 1:
        keys = ["cuda", "toolkits", *(f"toolkit.{v}.stands_in_for" for v in versions)]
        if not providers:
            raise FieldError(f"{where}field 'cuda': no toolkit provides torch's CUDA {variant.cuda} (toolkits: "
                             f"{', '.join(versions)}); add a {variant.cuda} toolkit, since CUDA_HOME must point at "
                             "the toolkit torch was built with", *keys)
        raise FieldError(f"{where}field 'toolkits': two toolkits provide CUDA {variant.cuda}; keep one", *keys)


def _check_toolkit(where: str, toolkit: Toolkit) -> None:
    prefix = f"toolkit.{toolkit.version}."
    if toolkit.stands_in_for and toolkit.stands_in_for.split(".")[0] != toolkit.version.split(".")[0]:
        raise FieldError(f"toolkit {toolkit.version}: field 'stands_in_for': {toolkit.stands_in_for} has another "
                         "major version, and torch refuses a toolkit of another major", prefix + "stands_in_for")
    if _capability(toolkit.min_arch) > _capability(toolkit.max_arch):
        raise FieldError(f"toolkit {toolkit.version}: min_arch {toolkit.min_arch} is above max_arch "
                         f"{toolkit.max_arch}", prefix + "min_arch", prefix + "max_arch")
    bad = unsupported_archs(toolkit)
    if bad:
        raise FieldError(f"{where}field 'cuda_arch_list': arch {bad[0]} cannot be compiled by CUDA "
                         f"{toolkit.version} (its nvcc covers {toolkit.min_arch} to {toolkit.max_arch}); drop it "
                         "from that toolkit's list", "cuda_arch_list", prefix + "min_arch", prefix + "max_arch")
