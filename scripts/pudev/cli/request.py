"""The command line, parsed once into a typed request: which variants, which
overrides, which build options. Nothing here reads a file or asks Docker."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from pudev.building.plan_assembly import BuildOptions
from pudev.config.overrides import Override, parse_assignments, parse_toolkit_images
from pudev.config.selection import Selection


@dataclass(frozen=True)
class Request:
    command: str
    selection: Selection
    build: BuildOptions
    options: argparse.Namespace  # the command's own options (--out, --registry, ...)
    pytest_args: tuple[str, ...] = ()  # after `--`, for `pudev test`


def _flag_overrides(args: argparse.Namespace) -> list[Override]:
    found = parse_assignments(getattr(args, "assignments", []))
    found += parse_toolkit_images(getattr(args, "toolkit_image", []))
    for key, flag in (("base_image", "--base-image"), ("mirror", "--mirror"), ("build_mirror", "--build-mirror")):
        value = getattr(args, key, "")
        if value:
            found.append(Override(key, value, f"{flag} {value}"))
    return found


def request_from(args: argparse.Namespace, pytest_args: list[str]) -> Request:
    """Each command has only the options it uses (its --help is true); the rest take their defaults here."""
    option = vars(args).get
    platform = option("platform") or ""  # checked against the variant's own platforms (Matrix.on)
    variants_file = str(option("variants_file") or "")
    selection = Selection(
        names=tuple(option("names") or ()),
        variants_file=Path(variants_file) if variants_file else None,
        profile=option("profile") or "",
        platform=platform,
        overrides=tuple(_flag_overrides(args)),
        pull_mirror=option("pull_mirror") or "",
    )
    build = BuildOptions(ca_bundle=option("ca_bundle"), no_ca_bundle=bool(option("no_ca_bundle")),
                         cache_from=tuple(option("cache_from") or ()), cache_to=tuple(option("cache_to") or ()),
                         no_cache=bool(option("no_cache")))
    return Request(command=args.command, selection=selection, build=build, options=args,
                   pytest_args=tuple(pytest_args))
