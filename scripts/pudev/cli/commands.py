"""What each `pudev` command does with a parsed request. Each handler resolves
the selection once and hands plans or variants to the stage that does the work."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pudev.building.plan import BuildPlan, local_tag
from pudev.cli.request import Request
from pudev.common.errors import PudevError
from pudev.common.halves import PLATFORM_PROOF
from pudev.config.model import Variant
from pudev.config.selection import Selected, resolve


def _plans(request: Request, variants: Sequence[Variant]) -> list[BuildPlan]:
    from pudev.building.plan_assembly import plan_builds

    flags = "".join(f" {override.source}" for override in request.selection.overrides)  # as typed
    return plan_builds(variants, request.build, profile=request.selection.profile, flags=flags)


def cmd_variants(request: Request) -> int:
    from pudev.config.variant_table import variants_markdown, variants_table

    matrix = resolve(request.selection, require_names=False).matrix
    print(variants_markdown(matrix) if request.options.markdown else variants_table(matrix))
    return 0


def cmd_plan(request: Request) -> int:
    from pudev.building.digests import FOR_PLAN, identify

    # The client is named as configured, never probed. An engine, where one answers, only fills in the
    # input digests it already knows; the note names those the build resolves after pulling.
    docker = os.environ.get("PUDEV_DOCKER", "").strip() or "docker"
    for plan in identify(_plans(request, resolve(request.selection).variants), FOR_PLAN):
        print(f"# {plan.variant.name}: run from any directory")
        for line in plan.pending_note():
            print(f"# {line}")
        print(plan.shell_command(docker))
    return 0


def cmd_build(request: Request) -> int:
    from pudev.building.builder import run_build

    for plan in _plans(request, resolve(request.selection).variants):  # bad input fails before any build starts
        run_build(plan)
    return 0


def _build_command(request: Request, variant: Variant) -> str:
    """The command that builds the image `variant` names here (a profile's build has its own tag)."""
    profile = request.selection.profile
    return f"pudev build --profile {profile}" if profile else f"pudev build {variant.name}"


def _half(request: Request) -> str:
    if request.options.platform_proof:
        return PLATFORM_PROOF
    return "cpu" if request.options.cpu_only else "gpu" if request.options.gpu_only else "all"


def cmd_test(request: Request) -> int:
    """Local builds by variant (or profile), or pushed candidates by digest."""
    from pudev.release.candidate_tests import run_candidate_tests
    from pudev.release.targets import is_image_reference, parse_digest_ref
    from pudev.testing.testrun import run_image_tests

    options = request.options
    junit = Path(options.junit) if options.junit else None
    refs = [name for name in request.selection.names if is_image_reference(name)]
    reuse = bool(options.reuse_local_pass)
    if reuse and (not refs or junit is not None):
        raise PudevError("--reuse-local-pass: only for candidates by digest (REGISTRY/REPO@sha256:...), and without "
                         "--junit (the run it reuses wrote that report)")
    if refs:
        if len(refs) != len(request.selection.names):
            raise PudevError("pudev test takes variant names or image references by digest, not both")
        for text in refs:
            code = run_candidate_tests(parse_digest_ref(text, flag="pudev test"), half=_half(request),
                                       timeout=options.timeout, junit=junit, pytest_args=list(request.pytest_args),
                                       reuse_local_pass=reuse, platform=request.selection.platform)
            if code != 0:
                return code
        return 0
    from pudev.engine import docker, images

    variants = resolve(request.selection).variants
    docker.require_daemon()  # so that a missing image below means "not built", not "no engine"
    for variant in variants:
        images.require_image(local_tag(variant), build_hint=_build_command(request, variant))
    for variant in variants:
        outcome = run_image_tests(local_tag(variant), timeout=options.timeout, half=_half(request), junit=junit,
                                  pytest_args=list(request.pytest_args))
        if outcome.code != 0:
            return outcome.code
    return 0


def _tags(selected: Selected) -> list[tuple[str, list[str]]]:
    from pudev.release.tags import compute_tags, read_facts

    return [(local_tag(variant), compute_tags(read_facts(local_tag(variant)), variant=variant.name,
                                              is_default=variant.name == selected.matrix.default_variant))
            for variant in selected.variants]


def cmd_tags(request: Request) -> int:
    for _, tags in _tags(resolve(request.selection)):
        print("\n".join(tags))
    return 0


def cmd_manifest(request: Request) -> int:
    from pudev.reports.manifest import write_manifest
    from pudev.reports.manifest_diff import diff_manifests, load_manifest

    if request.options.diff:
        # A variant name stands for its local build, as everywhere else.
        known = resolve(request.selection, require_names=False).matrix.variants
        loaded = []
        for item, position in zip(request.options.diff, "AB", strict=True):
            variant = known.get(item)
            loaded.append(load_manifest(local_tag(variant), position=position,
                                        build_hint=_build_command(request, variant)) if variant
                          else load_manifest(item, position=position, build_hint="pudev build VARIANT"))
        before, after = loaded
        print(diff_manifests(before, after))
        return 0
    for variant in resolve(request.selection).variants:
        for path in write_manifest(local_tag(variant), Path(request.options.out), variant.name,
                                   build_hint=_build_command(request, variant)):
            print(f"wrote {path}")
    return 0


def cmd_push(request: Request) -> int:
    from pudev.engine import images
    from pudev.release.candidates import push_candidate
    from pudev.release.targets import parse_target

    for variant in resolve(request.selection).variants:
        images.require_image(local_tag(variant), build_hint=_build_command(request, variant))
        candidate, tag = push_candidate(local_tag(variant), variant.name, parse_target(request.options.registry,
                                                                                        variant.image))
        print(f"candidate {candidate} (tag {tag})")
        if request.options.ref_file:
            Path(request.options.ref_file).write_text(f"{candidate}\n")
    return 0


def cmd_promote(request: Request) -> int:
    import dataclasses

    from pudev.registry.client import RegistryClient
    from pudev.release.platform_index import promote_index
    from pudev.release.promote import promote
    from pudev.release.targets import parse_digest_ref, require_pushed
    from pudev.release.testresults import results

    refs = list(request.selection.names)
    if not refs:
        raise PudevError("pudev promote takes the candidates by digest, one per platform the variant is built for: "
                         "REGISTRY/REPO-candidates@sha256:...")
    candidates = [parse_digest_ref(ref, flag="pudev promote") for ref in refs]
    if len({candidate.target for candidate in candidates}) != 1:
        raise PudevError("pudev promote: every candidate must come from one candidate repository")
    client = RegistryClient(candidates[0].target.api)
    client.ping()
    found = {}
    for candidate in candidates:
        require_pushed(client, candidate, flag="pudev promote")
        found[candidate.digest] = results(client, candidate)
    named = {tested[-1].variant for tested in found.values() if tested}
    if len(named) > 1:
        raise PudevError(f"pudev promote: the candidates were tested as different variants ({', '.join(sorted(named))})"
                         "; promote each variant's candidates on their own")
    if not named and not request.selection.profile:
        raise PudevError(f"{candidates[0]} has no test result at all: run `pudev test {candidates[0]}` first")
    # The variant (with the profile and flags applied) says which halves must have passed, and on which platforms.
    names = () if request.selection.profile else tuple(named)
    selected = resolve(dataclasses.replace(request.selection, names=names))
    variant = selected.variants[0]
    is_default = variant.name == selected.matrix.default_variant
    if len(variant.platforms) == 1 and len(candidates) == 1:
        release, tags = promote(candidates[0], found=found[candidates[0].digest], variant=variant.name,
                                is_default=is_default, required=variant.required_tests, client=client)
    else:
        required = {platform: selected.matrix.on(variant.name, platform).required_tests
                    for platform in variant.platforms}  # each platform's build may require its own halves
        release, tags = promote_index(candidates, found=found, variant=variant.name, platforms=variant.platforms,
                                      is_default=is_default, required=required, client=client)
    print(f"promoted {release}: {', '.join(tags)}")
    return 0


def cmd_sbom(request: Request) -> int:
    from pudev.reports.sbom_io import fetch_sbom, push_sbom, registry_target, write_sbom

    options = request.options
    if len(request.selection.names) != 1:
        raise PudevError("pudev sbom takes one image: a built variant's tag or REGISTRY/REPO@sha256:...")
    (reference,) = request.selection.names
    if options.fetch:
        text = fetch_sbom(reference)
    else:
        if options.push:
            registry_target(reference)  # a reference the registry lacks fails before the image is read

        text = write_sbom(reference)
        if options.push:
            print(f"pushed {push_sbom(reference, text)}", file=sys.stderr)
    if options.out == "-":
        print(text)
    else:
        Path(options.out).write_text(text)
        print(f"wrote {options.out}")
    return 0


def cmd_pin(request: Request) -> int:
    from pudev.config.loader import variants_input
    from pudev.policy.pin import pin_file

    source = variants_input(request.selection.variants_file)
    changes = pin_file(source)
    for old, new in changes.items():
        print(f"{old} -> {new}")
    print(f"pinned {len(changes)} image(s) in {source.path}")
    return 0


def cmd_matrix(request: Request) -> int:
    from pudev.building.cimatrix import matrix_json, publish_json

    selected = resolve(request.selection, require_names=False)
    # The whole matrix, or with --profile only the profile's variant (the workflow's cheap first run).
    only = tuple(variant.name for variant in selected.variants)
    print((publish_json if request.options.publish else matrix_json)(selected.matrix, only=only))
    return 0


def cmd_bake(request: Request) -> int:
    from pudev.building.bake import bake_json
    from pudev.building.digests import FOR_BAKE, identify

    selected = resolve(request.selection, require_names=False)
    # The whole matrix, or the profile's variant: each target is the plan `pudev build` would run.
    plans = _plans(request, selected.variants or tuple(selected.matrix.variants.values()))
    text = bake_json(identify(plans, FOR_BAKE))
    if request.options.out == "-":
        print(text, end="")
    else:
        Path(request.options.out).write_text(text)
        print(f"wrote {request.options.out}")
    return 0


def cmd_bench_build(request: Request) -> int:
    import dataclasses

    from pudev.devtools.benchbuild import bench_build

    selection = request.selection
    if not selection.profile and not selection.names:
        selection = dataclasses.replace(selection, profile="local")
    (variant,) = resolve(selection).variants
    compare = Path(request.options.compare) if request.options.compare else None
    print(bench_build(Path(request.options.out), variant, selection.profile, compare))
    print(f"wrote {request.options.out}")
    return 0


def cmd_bench_ext(request: Request) -> int:
    import dataclasses

    from pudev.devtools.benchext import bench_ext
    from pudev.engine import docker

    selection = request.selection
    if not selection.profile and not selection.names:
        selection = dataclasses.replace(selection, profile="local")
    (variant,) = resolve(selection).variants
    image = local_tag(variant)
    if docker.image_id(image) is None:
        raise PudevError(f"no image {image} here: build it first (pudev build --profile {selection.profile})")
    parts = request.options.part or ["speed", "memory"]
    print(bench_ext(Path(request.options.out), image, selection.profile or variant.name, parts))
    print(f"wrote {request.options.out}")
    return 0


def cmd_clean(request: Request) -> int:
    from pudev.engine import docker

    matrix = resolve(request.selection, require_names=False).matrix
    tags = [local_tag(variant) for variant in matrix.variants.values()]
    docker.run(["rmi", *tags], check=False)
    print(f"removed local tags: {', '.join(tags)}")
    return 0


def cmd_standins(request: Request) -> int:
    from pudev.building.cabundle import resolve_ca_bundle
    from pudev.devtools.standins import build_standins

    ca_bundle = resolve_ca_bundle(request.build.ca_bundle, disabled=request.build.no_ca_bundle)
    for line in build_standins(ca_bundle, platform=request.options.platform):
        print(line)
    return 0


def cmd_profiles(request: Request) -> int:
    from pudev.config.profiles import profile_names

    print("\n".join(profile_names()))
    return 0


def cmd_lock(request: Request) -> int:
    from pudev.config.variant_table import with_table
    from pudev.devtools.lock_resolver import write_locks
    from pudev.paths import REPO_ROOT

    selected = resolve(request.selection, require_names=False)
    chosen = list(selected.variants) or selected.matrix.every_build()
    # A lock shared by several variants is resolved for all of them, whichever one was named.
    names = {variant.lock for variant in chosen}
    sharing = [variant for variant in selected.matrix.every_build() if variant.lock in names]
    sharing += [variant for variant in chosen if variant not in sharing]  # a profile's own build
    for path in write_locks(sharing, without_base=request.options.without_base):
        print(f"wrote {path}")
    # The README's variant table is derived from the matrix too: refreshed with the locks.
    readme = REPO_ROOT / "README.md"
    if not request.selection.profile and readme.is_file():
        text = readme.read_text()
        updated = with_table(text, selected.matrix)
        if updated != text:
            readme.write_text(updated)
            print(f"updated the variant table in {readme}")
    return 0


HANDLERS = {
    "variants": cmd_variants, "plan": cmd_plan, "build": cmd_build, "test": cmd_test, "tags": cmd_tags,
    "manifest": cmd_manifest, "push": cmd_push, "promote": cmd_promote, "sbom": cmd_sbom, "pin": cmd_pin,
    "matrix": cmd_matrix, "bake": cmd_bake,
    "bench-build": cmd_bench_build, "bench-ext": cmd_bench_ext,
    "clean": cmd_clean, "standins": cmd_standins, "profiles": cmd_profiles,
    "lock": cmd_lock,
}
