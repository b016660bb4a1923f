"""A build plan: the exact `docker build` command for one variant. Pure: it
reads no engine state, so `pudev plan` prints the same plan on every machine.
What only the engine or a registry knows (the input images' digests) comes in
as `images`, resolved by build/digests.py; the plan says which it still lacks."""

from __future__ import annotations

import platform
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pudev.build.labels import OCI, PUDEV, SourceInfo, base_labels, build_labels
from pudev.build.locks import lock_path
from pudev.config.model import Variant
from pudev.paths import DOCKERFILE, REPO_ROOT

_MACHINE_TO_PLATFORM = {
    "x86_64": "linux/amd64", "amd64": "linux/amd64", "aarch64": "linux/arm64", "arm64": "linux/arm64",
}
TARGET = "final"


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
# lock's hash and the commit; the images' digests come from the engine or a registry.
PLANNED_INPUTS = ("LOCK_SHA256", "SOURCE_REVISION")
ENGINE_INPUTS = ("BASE_DIGEST", "TOOLKIT_A_DIGEST", "TOOLKIT_B_DIGEST")
BASE_LABELS = (f"{OCI}.base.digest", f"{PUDEV}.base.id")


def input_images(variant: Variant) -> dict[str, str]:
    """ENGINE_INPUTS -> the image each one identifies."""
    return dict(zip(ENGINE_INPUTS, (variant.base_image, *(toolkit.image for toolkit in variant.toolkits)), strict=True))


@dataclass(frozen=True)
class ImageIdentity:
    """An input image as resolved: its registry digest, and its local id when the engine has it."""

    digest: str = ""  # sha256:... of the manifest (or index) the reference names
    image_id: str = ""  # the engine's id; the only identity of images built here (stand-ins)

    @property
    def pin(self) -> str:
        return self.digest or self.image_id


@dataclass(frozen=True)
class BuildSpec:
    """Everything one build is told, flattened once: the docker command and the bake
    target are two spellings of it, so they cannot drift apart."""

    dockerfile: Path
    context: Path
    target: str
    platform: str
    args: dict[str, str | None]  # None: an engine input not resolved yet (pudev build resolves it)
    labels: dict[str, str]
    tag: str
    ca_bundle: Path | None
    cache_from: tuple[str, ...]
    cache_to: tuple[str, ...]
    no_cache: bool
    pending_labels: tuple[str, ...]  # labels pudev build adds once it has pulled the base

    @property
    def pending_args(self) -> tuple[str, ...]:
        return tuple(key for key, value in self.args.items() if value is None)


@dataclass(frozen=True)
class BuildPlan:
    variant: Variant
    source: SourceInfo
    lock_sha256: str
    ca_bundle: Path | None = None
    # BuildKit cache specs, e.g. type=registry,ref=ghcr.io/o/cache:cu121. They need buildx
    # with a docker-container builder, so the image is then --load-ed into the engine.
    cache_from: tuple[str, ...] = ()
    cache_to: tuple[str, ...] = ()
    no_cache: bool = False
    images: Mapping[str, ImageIdentity] = field(default_factory=dict)  # image reference -> identity
    dockerfile: Path = DOCKERFILE
    context: Path = REPO_ROOT

    @property
    def tag(self) -> str:
        return local_tag(self.variant)

    def spec(self) -> BuildSpec:
        """The one flattening of variant, inputs and labels."""
        known = {key: self.images.get(ref, ImageIdentity()).pin or None
                 for key, ref in input_images(self.variant).items()}
        base = self.images.get(self.variant.base_image, ImageIdentity())
        # An image the engine lacks is pulled by the build: the base's local id (and, unless pinned, its digest)
        # are known from then on. One the engine has is labelled as it is (a stand-in has no digest at all).
        pending = () if base.image_id else tuple(
            name for name, value in zip(BASE_LABELS, (base.digest, base.image_id), strict=True) if not value)
        return BuildSpec(
            dockerfile=self.dockerfile, context=self.context, target=TARGET, platform=self.variant.platform,
            args={**build_args(self.variant), "LOCK_SHA256": self.lock_sha256,
                  "SOURCE_REVISION": self.source.revision, **known},
            labels={**build_labels(self.variant, self.source), **base_labels(base.digest, base.image_id)},
            tag=self.tag, ca_bundle=self.ca_bundle, cache_from=self.cache_from, cache_to=self.cache_to,
            no_cache=self.no_cache, pending_labels=pending,
        )

    def docker_args(self) -> list[str]:
        """Arguments after `docker` (run with DOCKER_BUILDKIT=1, from any directory). An engine input
        not resolved yet is passed bare (`--build-arg NAME`): docker then reads it from the environment."""
        return cli_args(self.spec())

    def pending_note(self) -> list[str]:
        """What `pudev build` adds that this plan cannot know yet: no lines when nothing is missing."""
        spec = self.spec()
        if not spec.pending_args and not spec.pending_labels:
            return []
        images = input_images(self.variant)
        pulled = [images[name] for name in spec.pending_args]
        pulled += [self.variant.base_image] if spec.pending_labels else []
        labels = f"; labels {', '.join(spec.pending_labels)}" if spec.pending_labels else ""
        return [f"resolved at build time: {', '.join(spec.pending_args) or 'no build argument'}{labels}",
                f"  (pudev build first pulls {', '.join(dict.fromkeys(pulled))}, not on this engine;",
                "  by hand, a bare --build-arg NAME takes $NAME from the environment)"]

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


def cli_args(spec: BuildSpec) -> list[str]:
    """The spec as `docker build` arguments (bake.py spells the same spec as a bake target)."""
    args = ["build", "--progress=plain", "--file", str(spec.dockerfile), "--target", spec.target]
    if spec.no_cache:
        args.append("--no-cache")
    if spec.platform != native_platform():
        args += ["--platform", spec.platform]
    for key, value in spec.args.items():
        args += ["--build-arg", key if value is None else f"{key}={value}"]
    for key, value in sorted(spec.labels.items()):
        args += ["--label", f"{key}={value}"]
    if spec.ca_bundle is not None:
        args += ["--secret", f"id=ca,src={spec.ca_bundle}"]
    for cache in spec.cache_from:
        args += ["--cache-from", cache]
    for cache in spec.cache_to:
        args += ["--cache-to", cache]
    if spec.cache_from or spec.cache_to:
        args.append("--load")  # a docker-container builder keeps results to itself otherwise
    args += ["--tag", spec.tag, str(spec.context)]
    return args
