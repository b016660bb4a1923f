"""The variant matrix as typed values: what docker/variants.toml declares, after
overrides, validated. Everything else (plans, tags, CI matrix, bake file, the
image's own record) is derived from these objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.common.halves import SUITE_HALVES


@dataclass(frozen=True)
class Toolkit:
    """One CUDA toolkit slot: where it comes from and what its nvcc accepts."""

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
    name: str
    torch: str
    cuda: str  # torch's CUDA (torch.version.cuda)
    python: str
    cxx_standard: str  # the C++ standard torch's extensions compile with (c++17, c++20)
    base_image: str
    toolkits: tuple[Toolkit, ...]
    image: str
    platform: str  # the one platform this build of the variant is for
    mirror: str
    build_mirror: str
    lock: str  # requirements/lock/<lock>.txt; variants with identical inputs share one
    required_tests: tuple[str, ...] = SUITE_HALVES  # suite halves a candidate must pass to be promoted
    platforms: tuple[str, ...] = ("linux/amd64",)  # every platform the variant is built for; one tag spans them
    base: str = "official"  # official: base_image is a PyTorch image; wheels: the build adds torch to it
    torch_index: str = ""  # where a `wheels` base gets torch from ("" = pip's default index)
    latest: bool = False  # the matrix's default_variant: promotion also tags it `latest`

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


def cuda_tag(cuda: str) -> str:
    """12.1 -> cu121: the variant name and tag that torch's CUDA release implies."""
    return "cu" + cuda.replace(".", "")


@dataclass(frozen=True)
class Matrix:
    path: Path
    default_variant: str
    variants: dict[str, Variant]  # each variant on this host's platform where built for it, else its first
    builds: dict[str, dict[str, Variant]] = field(default_factory=dict)  # name -> platform -> that build

    def get(self, name: str) -> Variant:
        if name not in self.variants:
            valid = ", ".join(self.variants)
            raise PudevError(f"unknown variant '{name}': valid variants are {valid} (see `pudev variants`)")
        return self.variants[name]

    def on(self, name: str, platform: str, *, source: str = "--platform") -> Variant:
        """The variant's build for `platform`; a platform it is not built for fails naming the ones it is."""
        variant = self.get(name)
        if not platform:
            return variant
        built = self.builds.get(name, {variant.platform: variant})
        if platform not in built:
            raise PudevError(f"{source} {platform}: variant {name} is built for {', '.join(built)} only; choose one "
                             f"of those, or add {platform} to its `platforms` in {self.path.name}")
        return built[platform]

    def every_build(self) -> list[Variant]:
        """Each variant on each of its platforms, in file order."""
        return [build for name, variant in self.variants.items()
                for build in self.builds.get(name, {variant.platform: variant}).values()]
