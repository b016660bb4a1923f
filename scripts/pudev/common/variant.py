"""One variant of the image, and the one place each of its fields is declared.

A field's metadata says everywhere it goes: the variant file's schema (`toml`, whether
it is required there, may differ per platform), the Dockerfile build argument, the image
label, the CI matrix column and the variants table's column. The record key is the field's
own name (the variant's name is recorded as `variant`). Schema keys, build arguments,
labels, the CI matrix, the table and the in-image record reader all iterate these fields
(`declared_fields`), so a field added here reaches each of them with no other edit.

It lives in common/ because both sides read it: the host plans builds from it, and the
image's record reader (pudev.image.record) refuses a record with a field it does not know.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pudev.common.halves import SUITE_HALVES
from pudev.common.versions import release

PUDEV_LABELS = "org.pudev"
# Where a field may be written in docker/variants.toml: at the top as every variant's default
# and in a variant ("shared"), only in a variant ("variant"), or nowhere: derived ("").
Placement = Literal["shared", "variant", ""]


@dataclass(frozen=True)
class Contract:
    """Where one variant field goes. "" = not there."""

    toml: Placement = ""
    required: bool = False  # the variant file must give it (a default never applies)
    per_platform: bool = False  # a variant's [on."PLATFORM"] table may set it
    build_arg: str = ""  # the Dockerfile ARG carrying it: only what Docker itself needs before the record
    label: str = ""  # the image label: a bare name is under org.pudev, a dotted one is the whole key
    ci: str = ""  # its key in `pudev matrix`
    column: str = ""  # its header in `pudev variants` and the docs' variant table
    # A value check for a field with no check of its own in pudev.config.schema (a regex and what it means).
    pattern: str = ""
    expected: str = ""

    @property
    def label_key(self) -> str:
        return self.label if "." in self.label else f"{PUDEV_LABELS}.{self.label}"


def declared(default: Any = dataclasses.MISSING, **contract: Any) -> Any:
    """A dataclass field with its contract as metadata (typed Any, as dataclasses.field is)."""
    metadata = {"contract": Contract(**contract)}
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Toolkit:
    """One CUDA toolkit slot: where it comes from and what its nvcc accepts (a [toolkits."X.Y"] table)."""

    version: str
    image: str
    max_gcc: int  # the newest gcc major this nvcc accepts
    min_arch: str  # the oldest and newest compute capability it compiles for
    max_arch: str
    arch_list: str  # TORCH_CUDA_ARCH_LIST while this toolkit is active
    stands_in_for: str = ""  # a stand-in toolkit: the CUDA release it replaces in tests
    platforms: tuple[str, ...] = ("linux/amd64",)  # the platforms its image carries

    @property
    def provides(self) -> str:
        """The CUDA release this slot counts as (itself, or the one it stands in for)."""
        return self.stands_in_for or self.version


@dataclass(frozen=True)
class Variant:
    name: str = declared(label="variant", ci="variant", column="variant")
    platform: str = declared(ci="platform", column="platform")  # the one platform this build is for
    torch: str = declared(toml="variant", required=True, build_arg="TORCH_VERSION", label="torch", ci="torch",
                          column="torch")
    cuda: str = declared(toml="variant", required=True, build_arg="CUDA_VERSION", label="cuda", ci="cuda",
                         column="CUDA")  # torch's CUDA (torch.version.cuda)
    python: str = declared(toml="shared", required=True, per_platform=True, build_arg="PYTHON_VERSION",
                           label="python", ci="python", column="Python")
    # The C++ standard torch's extensions compile with (c++17, c++20).
    cxx_standard: str = declared(toml="shared", required=True, build_arg="CXX_STANDARD")
    base_image: str = declared(toml="variant", required=True, per_platform=True, build_arg="BASE_IMAGE",
                               label="org.opencontainers.image.base.name", ci="base_image", column="base")
    # Two slots; their build arguments, label and column are per slot (pudev.building.plan, labels).
    # A variant that lists none gets torch's own and the matrix's `second_toolkit` rule's (pudev.config.rules).
    toolkits: tuple[Toolkit, ...] = declared(toml="variant", ci="toolkits",
                                             column="toolkits (* = CUDA_HOME)")
    image: str = declared(toml="shared", required=True, label="image", ci="image")  # the repository name
    mirror: str = declared(toml="shared", required=True, build_arg="MIRROR", label="mirror")
    # Defaults to mirror. The build gets its values, not its name (pudev.building.plan.build_args).
    build_mirror: str = declared(toml="shared")
    # requirements/lock/<lock>.txt; variants with identical inputs share one (LOCK is its file name).
    lock: str = declared(toml="variant", per_platform=True)
    # The suite halves (or the platform scope) a candidate must pass to be promoted.
    required_tests: tuple[str, ...] = declared(SUITE_HALVES, toml="shared", per_platform=True,
                                               label="required-tests")
    # Every platform the variant is built for; one tag spans them.
    platforms: tuple[str, ...] = declared(("linux/amd64",), toml="shared", required=True, label="platforms",
                                          ci="platforms")
    # official: base_image is a PyTorch image; wheels: the build adds torch to it.
    base: str = declared("official", toml="variant", per_platform=True, build_arg="BASE_KIND", ci="base")
    # A `wheels` base's wheels are installed on the build platform, in this image (default: base_image,
    # which NVIDIA publishes for every platform; a stand-in built for one platform names its twin).
    build_platform_image: str = declared("", toml="variant", per_platform=True, build_arg="BUILD_PLATFORM_IMAGE")
    # Where a `wheels` base gets torch from ("" = pip's default index).
    torch_index: str = declared("", toml="variant", per_platform=True, build_arg="TORCH_INDEX")
    latest: bool = declared(False, label="latest", ci="latest")  # the matrix's default_variant: also tagged latest

    @property
    def toolkit_versions(self) -> tuple[str, ...]:
        return tuple(toolkit.version for toolkit in self.toolkits)

    @property
    def default(self) -> Toolkit:
        """The toolkit CUDA_HOME points at: the one that provides torch's CUDA (checked at load)."""
        return next(toolkit for toolkit in self.toolkits if toolkit.provides == self.cuda)

    @property
    def default_toolkit(self) -> str:
        return self.default.version

    @property
    def cuda_tag(self) -> str:
        return cuda_tag(self.cuda)

    @property
    def torch_release(self) -> tuple[int, ...]:
        """torch's version as numbers, for ordering (2.15.0 after 2.5.1)."""
        return release(self.torch)


@dataclass(frozen=True)
class Derived:
    """A value computed from the variant's fields that also travels (the default toolkit, its arch list)."""

    name: str
    value: Callable[[Variant], str]
    contract: Contract


DERIVED = (
    Derived("default_toolkit", lambda variant: variant.default_toolkit,
            Contract(build_arg="DEFAULT_TOOLKIT", label="default-toolkit", ci="default_toolkit")),
    # Declared as one list or one per toolkit; each toolkit's lands in its slot (Toolkit.arch_list).
    Derived("cuda_arch_list", lambda variant: variant.default.arch_list,
            Contract(toml="shared", required=True, per_platform=True, build_arg="CUDA_ARCH_LIST",
                     column="arch list (CUDA_HOME)")),
)
# The record key of each field is its name, but for the variant's own name (image.json's since the first record).
RECORD_KEY = {"name": "variant"}


def contract_of(item: dataclasses.Field[Any]) -> Contract:
    found = item.metadata.get("contract")
    if not isinstance(found, Contract):
        raise TypeError(f"variant field {item.name!r} has no contract: declare it with declared(...)")
    return found


def declared_fields(model: type[Variant] = Variant) -> Iterator[tuple[str, Contract]]:
    """(name, contract) of every field of `model` in declaration order (a test may pass a subclass)."""
    for item in dataclasses.fields(model):
        yield item.name, contract_of(item)


def label_key(name: str, model: type[Variant] = Variant) -> str:
    """The label a field travels under, as its contract names it (a field without one fails loudly)."""
    for field_name, contract in declared_fields(model):
        if field_name == name and contract.label:
            return contract.label_key
    raise KeyError(f"variant field {name!r} declares no label")


def every_contract(model: type[Variant] = Variant) -> Iterator[tuple[str, Contract]]:
    """The fields and then what is derived: everything that travels, in the order it is shown."""
    yield from declared_fields(model)
    yield from ((item.name, item.contract) for item in DERIVED)


def travelling_values(variant: Variant) -> Iterator[tuple[str, Contract, Any]]:
    """(name, contract, value) of every field of the variant and of what is derived from it."""
    for name, contract in declared_fields(type(variant)):
        yield name, contract, getattr(variant, name)
    for item in DERIVED:
        yield item.name, item.contract, item.value(variant)


def record_keys(model: type[Variant] = Variant) -> set[str]:
    """The keys the host puts in an image's record for the variant: its fields and what is derived."""
    return {RECORD_KEY.get(name, name) for name, _ in declared_fields(model)} | {item.name for item in DERIVED}


def as_text(value: Any) -> str:
    """How a value is written where only text goes (a build argument, a label)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ",".join(as_text(item) for item in value)
    if isinstance(value, Toolkit):
        return value.version
    return str(value)


def cuda_tag(cuda: str) -> str:
    """12.1 -> cu121: the variant name and tag that torch's CUDA release implies."""
    return "cu" + cuda.replace(".", "")
