"""The variant matrix as typed values: what docker/variants.toml declares, after
overrides, validated. Everything else (plans, tags, CI matrix, bake file, the
image's own record) is derived from these objects. A variant and its fields are
declared in pudev.common.variant, which the image side reads too."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.common.variant import Toolkit, Variant, cuda_tag
from pudev.config.schema import PLATFORMS

__all__ = ["Matrix", "Toolkit", "Variant", "cuda_tag"]


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
            fix = f", or add {platform} to its `platforms` in {self.path.name}" if platform in PLATFORMS else \
                f" (pudev builds {' and '.join(PLATFORMS)})"
            raise PudevError(f"{source} {platform}: variant {name} is built for {', '.join(built)} only; choose one "
                             f"of those{fix}")
        return built[platform]

    def every_build(self) -> list[Variant]:
        """Each variant on each of its platforms, in file order."""
        return [build for name, variant in self.variants.items()
                for build in self.builds.get(name, {variant.platform: variant}).values()]
