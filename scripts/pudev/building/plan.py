"""A build plan: the exact `docker build` command for one variant, its labels and
the image record it hands the build. Pure: it reads no engine state, so `pudev
plan` prints the same plan on every machine. What only the engine or a registry
knows (the input images' digests) comes in as `images`, resolved by
building/digests.py; where it is missing, the plan holds its place (building/input_images.py)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pudev.building.input_images import Fact, ImageIdentity, InputImage, every_fact, input_images
from pudev.building.labels import SourceInfo, base_labels, build_labels
from pudev.building.record import RECORD_ARG, planned_record, record_json
from pudev.building.requirement_locks import lock_path
from pudev.common.platforms import native_platform
from pudev.common.variant import as_text, travelling_values
from pudev.config.model import Variant
from pudev.config.rules import PLATFORM_SUFFIX
from pudev.mirror.catalogue import MIRRORS
from pudev.paths import DOCKERFILE, REPO_ROOT

TARGET = "final"
# `docker build` runs every RUN step in the host's network namespace. With the default (bridge)
# network, the Docker engine gives each RUN step a network sandbox of its own (an endpoint on the
# bridge, a namespace, a hook that runs dockerd again): about a quarter of a second a step on Docker
# 20.10 (12 one-line RUN steps: 3.4 to 4.0 s, against 0.7 s with host). None of the image's steps
# serves or needs a network of its own, and nothing of the network lands in a layer. Not a bake
# field: a remote BuildKit chooses its own network (asking it for host needs an entitlement).
BUILD_NETWORK = "host"


def local_tag(variant: Variant) -> str:
    """The engine keeps one platform per tag: another platform's build adds its suffix (cu132-arm64)."""
    return f"{variant.image}:{variant.name}{PLATFORM_SUFFIX[variant.platform]}"


def build_args(variant: Variant) -> dict[str, str]:
    """The ARGs Docker itself uses, in FROM lines and the steps before the record: each is in
    those steps' cache keys. The record step reads the variant from IMAGE_RECORD alone. Each
    field's ARG is declared with the field (pudev.common.variant); the lock, the two toolkit
    slots and the build mirror are spelled here: a file name, one ARG per slot and property, and
    the build mirror's values (empty: the base's own sources), so no build step needs pudev's catalogue."""
    args = {contract.build_arg: as_text(value) for _, contract, value in travelling_values(variant)
            if contract.build_arg}
    args["LOCK"] = lock_path(variant).name
    for slot, toolkit in zip(("A", "B"), variant.toolkits, strict=True):
        args.update({
            f"TOOLKIT_{slot}_IMAGE": toolkit.image,
            f"TOOLKIT_{slot}_VERSION": toolkit.version,
            f"TOOLKIT_{slot}_MAX_GCC": str(toolkit.max_gcc),
        })
    mirror = MIRRORS.get(variant.build_mirror)
    args.update({
        "BUILD_PYPI_INDEX": mirror.pypi_index if mirror else "",
        "BUILD_APT_MIRROR": mirror.apt_base if mirror else "",
        "BUILD_APT_SECURITY": "upstream" if mirror and mirror.apt_security_upstream else "mirror",
    })
    return args


@dataclass(frozen=True)
class BuildSpec:
    """Everything one build is told, flattened once: the docker command and the bake
    target are two spellings of it, so they cannot drift apart. A value may hold a fact's
    placeholder: what the build resolves is read from the values themselves (`pending`)."""

    dockerfile: Path
    context: Path
    target: str
    platform: str
    args: dict[str, str]
    labels: dict[str, str]
    tag: str
    ca_bundle: Path | None
    cache_from: tuple[str, ...]
    cache_to: tuple[str, ...]
    no_cache: bool
    facts: tuple[Fact, ...]  # every fact a value could hold the place of

    @property
    def pending(self) -> tuple[Fact, ...]:
        """The facts pudev build fills in: those whose placeholder a value holds."""
        return tuple(fact for fact in self.facts if fact.occurs_in([*self.args.values(), *self.labels.values()]))

    def where(self, fact: Fact) -> list[str]:
        """The build arguments and labels that hold `fact`'s place."""
        found = [key for key, value in self.args.items() if fact.placeholder in value]
        return found + [f"label {key}" for key, value in sorted(self.labels.items()) if fact.placeholder in value]


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

    @property
    def inputs(self) -> tuple[InputImage, ...]:
        return input_images(self.variant, self.images)

    def record(self) -> dict[str, Any]:
        """The image record as planned (IMAGE_RECORD): the variant, its inputs and the commit."""
        return planned_record(self.variant, self.inputs, lock_file=lock_path(self.variant).name,
                              lock_sha256=self.lock_sha256, revision=self.source.revision)

    def labels(self) -> dict[str, str]:
        base = self.inputs[0]  # input_images lists the base first
        digest, image_id = base.labels
        return {**build_labels(self.variant, self.source), **base_labels(digest, image_id)}

    def spec(self) -> BuildSpec:
        """The one flattening of variant, inputs and labels."""
        return BuildSpec(
            dockerfile=self.dockerfile, context=self.context, target=TARGET, platform=self.variant.platform,
            args={**build_args(self.variant), RECORD_ARG: record_json(self.record())}, labels=self.labels(),
            tag=self.tag, ca_bundle=self.ca_bundle, cache_from=self.cache_from, cache_to=self.cache_to,
            no_cache=self.no_cache, facts=every_fact(self.inputs),
        )

    def docker_args(self) -> list[str]:
        """Arguments after `docker` (run with DOCKER_BUILDKIT=1, from any directory)."""
        return cli_args(self.spec())

    def pending_note(self) -> list[str]:
        """What `pudev build` fills in that this plan cannot know yet: no lines when nothing is missing."""
        spec = self.spec()
        if not spec.pending:
            return []
        places = "; ".join(f"{fact.placeholder} in {', '.join(spec.where(fact))}" for fact in spec.pending)
        pulled = ", ".join(dict.fromkeys(fact.image for fact in spec.pending))
        return [f"resolved at build time: {places}",
                f"  (pudev build first pulls {pulled}, not on this engine;",
                "  by hand, pull them and run pudev plan again)"]

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
    args = ["build", "--progress=plain", "--file", str(spec.dockerfile), "--target", spec.target,
            "--network", BUILD_NETWORK]
    if spec.no_cache:
        args.append("--no-cache")
    if spec.platform != native_platform():
        args += ["--platform", spec.platform]
    for key, value in spec.args.items():
        args += ["--build-arg", f"{key}={value}"]
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
