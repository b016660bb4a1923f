"""A build plan: the exact `docker build` command for one variant. Pure: it
reads no engine state, so `pudev plan` prints the same plan on every machine."""

from __future__ import annotations

import platform
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from pudev.build.locks import lock_path
from pudev.config.model import Variant
from pudev.paths import DOCKERFILE, REPO_ROOT

_MACHINE_TO_PLATFORM = {
    "x86_64": "linux/amd64", "amd64": "linux/amd64", "aarch64": "linux/arm64", "arm64": "linux/arm64",
}


def native_platform() -> str:
    return _MACHINE_TO_PLATFORM.get(platform.machine().lower(), "")


def local_tag(variant: Variant) -> str:
    return f"{variant.image}:{variant.name}"


def build_args(variant: Variant) -> dict[str, str]:
    """Every ARG the Dockerfile reads, from the variant alone."""
    args = {
        "VARIANT": variant.name,
        "IMAGE_NAME": variant.image,
        "BASE_IMAGE": variant.base_image,
        "TORCH_VERSION": variant.torch,
        "CUDA_VERSION": variant.cuda,
        "PYTHON_VERSION": variant.python,
        "CXX_STANDARD": variant.cxx_standard,
        "LOCK": lock_path(variant).name,
    }
    for slot, toolkit in zip(("A", "B"), variant.toolkits, strict=True):
        args.update({
            f"TOOLKIT_{slot}_IMAGE": toolkit.image,
            f"TOOLKIT_{slot}_VERSION": toolkit.version,
            f"TOOLKIT_{slot}_MAX_GCC": str(toolkit.max_gcc),
            f"TOOLKIT_{slot}_ARCH_LIST": toolkit.arch_list,
        })
    args.update({
        "DEFAULT_TOOLKIT": variant.default_toolkit,
        "CUDA_ARCH_LIST": variant.default.arch_list,
        "MIRROR": variant.mirror,
        "BUILD_MIRROR": variant.build_mirror,
    })
    return args


# Build arguments that describe a build's inputs rather than the variant: the plan knows the
# lock's hash and the commit; the builder adds the images' digests, which only the engine knows.
PLANNED_INPUTS = ("LOCK_SHA256", "SOURCE_REVISION")
ENGINE_INPUTS = ("BASE_DIGEST", "TOOLKIT_A_DIGEST", "TOOLKIT_B_DIGEST")


@dataclass(frozen=True)
class BuildPlan:
    variant: Variant
    ca_bundle: Path | None = None
    labels: dict[str, str] = field(default_factory=dict)
    # BuildKit cache specs, e.g. type=registry,ref=ghcr.io/o/cache:cu121. They need buildx
    # with a docker-container builder, so the image is then --load-ed into the engine.
    cache_from: tuple[str, ...] = ()
    cache_to: tuple[str, ...] = ()
    no_cache: bool = False
    inputs: dict[str, str] = field(default_factory=dict)  # PLANNED_INPUTS, and ENGINE_INPUTS at build time
    dockerfile: Path = DOCKERFILE
    context: Path = REPO_ROOT

    @property
    def tag(self) -> str:
        return local_tag(self.variant)

    def docker_args(self, extra_labels: dict[str, str] | None = None) -> list[str]:
        """Arguments after `docker` (run with DOCKER_BUILDKIT=1, from any directory).
        `extra_labels` are what only the engine knows at build time (the base's digest)."""
        args = ["build", "--progress=plain", "--file", str(self.dockerfile), "--target", "final"]
        if self.no_cache:
            args.append("--no-cache")
        if self.variant.platform != native_platform():
            args += ["--platform", self.variant.platform]
        for key, value in {**build_args(self.variant), **self.inputs}.items():
            args += ["--build-arg", f"{key}={value}"]
        for key, value in sorted({**self.labels, **(extra_labels or {})}.items()):
            args += ["--label", f"{key}={value}"]
        if self.ca_bundle is not None:
            args += ["--secret", f"id=ca,src={self.ca_bundle}"]
        for spec in self.cache_from:
            args += ["--cache-from", spec]
        for spec in self.cache_to:
            args += ["--cache-to", spec]
        if self.cache_from or self.cache_to:
            args.append("--load")  # a docker-container builder keeps results to itself otherwise
        args += ["--tag", self.tag, str(self.context)]
        return args

    def shell_command(self, docker: str = "docker") -> str:
        """The command as a user would type it, one option per line."""
        args = self.docker_args()
        parts = [f"DOCKER_BUILDKIT=1 {shlex.quote(docker)} {args[0]}"]
        index = 1
        while index < len(args):
            token = args[index]
            if token.startswith("--") and "=" not in token and index + 1 < len(args):
                parts.append(f"{token} {shlex.quote(args[index + 1])}")
                index += 2
            else:
                parts.append(shlex.quote(token))
                index += 1
        return " \\\n    ".join(parts)
