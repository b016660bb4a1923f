"""Command-line selection of variants: names, profile and per-run overrides."""

from __future__ import annotations

import argparse
from typing import Any

from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.matrix import Matrix, Variant, load_matrix
from pudev.overrides import parse_overrides, toolkit_image_overrides
from pudev.paths import STANDINS_FILE, VARIANTS_FILE
from pudev.plan import BuildPlan
from pudev.profiles import load_profile


def add_selection_options(parser: argparse.ArgumentParser, *, names: str) -> None:
    if names == "*":
        parser.add_argument("names", nargs="*", metavar="VARIANT", help="variant names, or `all`")
    group = parser.add_argument_group("variant selection and overrides")
    group.add_argument("--variants-file", default=str(VARIANTS_FILE), metavar="PATH", help="the matrix file")
    group.add_argument("--profile", default="", help="a named override set, e.g. `local` (the stand-in build)")
    group.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE",
                       help="override a variant field, e.g. --set torch=2.4.1")
    group.add_argument("--base-image", default="", metavar="REF", help="same as --set base_image=REF")
    group.add_argument("--toolkit-image", action="append", default=[], metavar="VERSION=REF",
                       help="same as --set toolkit.VERSION.image=REF")
    group.add_argument("--mirror", default="", help="same as --set mirror=NAME (aliyun, tuna, none)")
    group.add_argument("--build-mirror", default="", help="same as --set build_mirror=NAME")
    group.add_argument("--pull-mirror", default="", metavar="PREFIX",
                       help="pull base and toolkit images through a registry mirror or pull-through proxy, "
                            "e.g. registry.cn-hangzhou.aliyuncs.com/my-mirror")
    group.add_argument("--ca-bundle", default=None, metavar="PATH",
                       help="extra CA bundle for the build's downloads (default: $PIP_CERT, $SSL_CERT_FILE, "
                            "$REQUESTS_CA_BUNDLE); passed as a BuildKit secret")
    group.add_argument("--cache-from", action="append", default=[], metavar="SPEC",
                       help="BuildKit cache source, e.g. type=registry,ref=ghcr.io/org/cache:cu121")
    group.add_argument("--cache-to", action="append", default=[], metavar="SPEC",
                       help="BuildKit cache export (needs buildx with a docker-container builder)")
    group.add_argument("--no-cache", action="store_true", help="run every build step again (cache mounts stay)")
    group.add_argument("--no-ca-bundle", action="store_true",
                       help="pass no CA bundle even if the environment names one")


def _cli_overrides(args: argparse.Namespace) -> dict[str, Any]:
    fields = parse_overrides(args.assignments)
    fields.update(toolkit_image_overrides(args.toolkit_image))
    for key, value in (("base_image", args.base_image), ("mirror", args.mirror), ("build_mirror", args.build_mirror)):
        if value:
            fields[key] = value
    return fields


def selected_variants(args: argparse.Namespace, *, require_names: bool = True) -> tuple[Matrix, list[Variant]]:
    from pathlib import Path

    path = Path(args.variants_file)
    names: list[str] = list(getattr(args, "names", []) or [])
    overrides: dict[str, Any] = {}
    if args.profile:
        profile = load_profile(STANDINS_FILE, args.profile)
        names = names or [profile.variant]
        overrides.update(profile.overrides)
    overrides.update(_cli_overrides(args))
    plain = load_matrix(path)
    if names == ["all"]:
        names = list(plain.variants)
    if not names and require_names:
        raise PudevError(f"name a variant: {', '.join(plain.variants)} (or `all`)")
    for name in names:
        plain.get(name)  # unknown names fail here, listing the valid ones
    matrix = load_matrix(path, {name: overrides for name in names}) if overrides else plain
    if getattr(args, "pull_mirror", ""):
        mirrored = {name: {**overrides, **mirror_overrides(matrix.get(name), args.pull_mirror)} for name in names}
        matrix = load_matrix(path, mirrored)
    return matrix, [matrix.get(name) for name in names]


def mirror_overrides(variant: Variant, prefix: str) -> dict[str, Any]:
    """Base and toolkit images pulled through `prefix` (a mirror or pull-through proxy)."""
    fields: dict[str, Any] = {"base_image": with_pull_mirror(variant.base_image, prefix)}
    for toolkit in variant.toolkits:
        fields[f"toolkit.{toolkit.version}.image"] = with_pull_mirror(toolkit.image, prefix)
    return fields


def with_pull_mirror(reference: str, prefix: str) -> str:
    """docker.io/pytorch/pytorch:x -> PREFIX/pytorch/pytorch:x (official images keep library/)."""
    ref = parse_image_ref(reference)
    mirror = parse_image_ref(prefix.rstrip("/") + "/x")
    if ref is None or mirror is None or not mirror.domain:
        raise PudevError(f"invalid --pull-mirror '{prefix}': write HOST[/PATH], e.g. registry.example.cn/mirror")
    if ref.domain and ref.domain not in ("docker.io", "index.docker.io"):
        raise PudevError(f"--pull-mirror only mirrors Docker Hub images; {reference} comes from {ref.domain}")
    path = ref.path if "/" in ref.path else f"library/{ref.path}"
    suffix = (f":{ref.tag}" if ref.tag else "") + (f"@{ref.digest}" if ref.digest else "")
    return f"{prefix.rstrip('/')}/{path}{suffix}"


def selected_plans(args: argparse.Namespace) -> list[BuildPlan]:
    from pudev.cabundle import resolve_ca_bundle
    from pudev.labels import base_identity, build_labels, source_info

    _, variants = selected_variants(args)
    ca_bundle = resolve_ca_bundle(args.ca_bundle, disabled=args.no_ca_bundle)
    source = source_info()
    return [BuildPlan(variant=variant, ca_bundle=ca_bundle,
                      labels=build_labels(variant, source, base_identity(variant.base_image)),
                      cache_from=tuple(args.cache_from), cache_to=tuple(args.cache_to), no_cache=args.no_cache)
            for variant in variants]
