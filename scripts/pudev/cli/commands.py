"""What each `pudev` command does with a parsed request. Each handler resolves
the selection once and hands plans or variants to the stage that does the work."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pudev.building.plan import BuildPlan, local_tag
from pudev.cli.arguments import refuse_foreign
from pudev.cli.request import Request
from pudev.common.errors import PudevError
from pudev.common.halves import PLATFORM_SCOPE
from pudev.config.model import Variant
from pudev.config.schema import require_platform
from pudev.config.selection import Selected, resolve

if TYPE_CHECKING:
    from pudev.testing.suite_run import LocalBuild


def _plans(request: Request, variants: Sequence[Variant]) -> list[BuildPlan]:
    from pudev.building.plan_assembly import plan_builds

    flags = "".join(f" {override.source}" for override in request.selection.overrides)  # as typed
    return plan_builds(variants, request.build, profile=request.selection.profile, flags=flags)


def cmd_variants(request: Request) -> int:
    from pudev.config.variant_table import variants_markdown, variants_table

    matrix = resolve(request.selection, require_names=False).matrix
    print(variants_markdown(matrix) if request.options.markdown else variants_table(matrix))
    return 0


def cmd_pick(request: Request) -> int:
    from pudev.config.loader import load_matrix, variants_input
    from pudev.host.pick import run_pick

    matrix = load_matrix(variants_input(request.selection.variants_file))
    return run_pick(matrix, output="json" if request.options.json else "tag" if request.options.tag else "text",
                    out=sys.stdout)


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
    if request.options.platform_only:
        return PLATFORM_SCOPE
    return "cpu" if request.options.cpu_only else "gpu" if request.options.gpu_only else "all"


def _local_builds(request: Request) -> list[LocalBuild]:
    """The selected variants' local builds, each with the command that builds it."""
    from pudev.testing.suite_run import LocalBuild

    return [LocalBuild(local_tag(variant), _build_command(request, variant))
            for variant in resolve(request.selection).variants]


def cmd_test(request: Request) -> int:
    """Local builds by variant (or profile), or pushed candidates by digest."""
    from pudev.release.targets import is_image_reference
    from pudev.release.test import run_candidate_tests
    from pudev.testing.suite_run import run_local_builds

    options, names = request.options, request.selection.names
    junit = Path(options.junit) if options.junit else None  # checked when parsed (cli/arguments.py)
    refs = [name for name in names if is_image_reference(name)]
    reuse = bool(options.reuse_local_pass)
    if reuse and (not refs or junit is not None):
        raise PudevError("--reuse-local-pass: only for candidates by digest (REGISTRY/REPO@sha256:...), and without "
                         "--junit (the run it reuses wrote that report)")
    if refs and len(refs) != len(names):
        raise PudevError("pudev test takes variant names or image references by digest, not both")
    if refs:
        require_platform(request.selection.platform)
        return run_candidate_tests(refs, half=_half(request), timeout=options.timeout, junit=junit,
                                   pytest_args=list(request.pytest_args), reuse_local_pass=reuse,
                                   platform=request.selection.platform)
    return run_local_builds(_local_builds(request), half=_half(request), timeout=options.timeout, junit=junit,
                            pytest_args=list(request.pytest_args))


def cmd_jupyter(request: Request) -> int:
    from pudev.engine.jupyter import run_jupyter

    options = request.options
    if options.image and (request.selection.names or request.selection.profile):
        raise PudevError("pudev jupyter takes a variant, a --profile or an --image, not several")
    if options.image:
        image, hint = options.image, "pull it first (docker pull IMAGE), or build one (make build-local)"
    else:
        variants = resolve(request.selection).variants
        if len(variants) != 1:
            raise PudevError("pudev jupyter runs one image: name one variant, a --profile, or an --image")
        image, hint = local_tag(variants[0]), f"build it first: {_build_command(request, variants[0])}"
    run_jupyter(image, port=options.port, workspace=Path(options.workspace), build_hint=hint)
    return 0  # not reached: the engine's client replaced this process


def _tags(selected: Selected) -> list[tuple[str, list[str]]]:
    from pudev.release.tags import compute_tags, read_facts

    return [(local_tag(variant), compute_tags(read_facts(local_tag(variant)), variant=variant.name,
                                              is_default=variant.latest))
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
    variants = resolve(request.selection).variants
    for variant in variants:  # every file checked before the first is written
        for suffix in (".json", ".md"):
            refuse_foreign(Path(request.options.out) / f"{variant.name}{suffix}", "manifest", "--out")
    for variant in variants:
        for path in write_manifest(local_tag(variant), Path(request.options.out), variant.name,
                                   build_hint=_build_command(request, variant)):
            print(f"wrote {path}")
    return 0


def cmd_push(request: Request) -> int:
    from pudev.release.push import push_local_builds

    ref_file = Path(request.options.ref_file) if request.options.ref_file else None
    push_local_builds(_local_builds(request), registry=request.options.registry, ref_file=ref_file)
    return 0


def cmd_promote(request: Request) -> int:
    from pudev.release.promote import promote_candidates

    release, tags = promote_candidates(request.selection.names)
    print(f"promoted {release}: {', '.join(tags)}")
    return 0


def cmd_sbom(request: Request) -> int:
    # Orchestrated here, not in release/: the SBOM is reports/' (which release/ may not import).
    from pudev.engine import docker
    from pudev.release.targets import parse_digest_ref
    from pudev.reports.sbom import fetch_sbom, push_sbom, registry_target, write_sbom

    options = request.options
    if len(request.selection.names) != 1:
        raise PudevError("pudev sbom takes one image: a built variant's tag or REGISTRY/REPO@sha256:...")
    (reference,) = request.selection.names
    if options.fetch or options.push:
        parse_digest_ref(reference, flag="pudev sbom")
    out = None if options.out == "-" else Path(options.out)
    if options.fetch:
        text = fetch_sbom(reference)
    else:
        if options.push:
            registry_target(reference)  # a reference the registry lacks fails before the engine is asked
        docker.require_daemon()  # so that a missing image below means "not built", not "no engine"
        text = write_sbom(reference)
        if options.push:
            print(f"pushed {push_sbom(reference, text)}", file=sys.stderr)
    if out is None:
        print(text)
    else:
        out.write_text(text)
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
    from pudev.building.matrix import matrix_json, publish_json

    selected = resolve(request.selection, require_names=False)
    # The whole matrix, or with --profile only the profile's variant (the workflow's cheap first run).
    only = tuple(variant.name for variant in selected.variants)
    print((publish_json if request.options.publish else matrix_json)(selected.matrix, only=only))
    return 0


def cmd_bake(request: Request) -> int:
    from pudev.building.bake import bake_command, bake_document, bake_text
    from pudev.building.digests import FOR_BAKE, identify

    selected = resolve(request.selection, require_names=False)
    # The whole matrix, or the profile's variant: each target is the plan `pudev build` would run.
    plans = _plans(request, selected.variants or tuple(selected.matrix.variants.values()))
    document = bake_document(identify(plans, FOR_BAKE))
    text = bake_text(document)
    if request.options.out == "-":
        print(text, end="")
    else:
        Path(request.options.out).write_text(text)
        print(f"wrote {request.options.out}; build it with: {shlex.join(bake_command(request.options.out, document))}")
    return 0


def cmd_clean(request: Request) -> int:
    from pudev.engine import docker

    matrix = resolve(request.selection, require_names=False).matrix
    docker.require_daemon()  # no engine is a failure, not "nothing to remove"
    removed = []
    for tag in [local_tag(variant) for variant in matrix.variants.values()]:
        result = docker.run(["rmi", tag], check=False)
        if result.returncode == 0:
            removed.append(tag)
        elif "no such image" not in result.stderr.lower():  # a tag never built is not a failure
            raise PudevError(f"`docker rmi {tag}` failed: {docker.last_line(result.stderr)}; stop the containers "
                             f"that use it (docker ps -a --filter ancestor={tag}), then run pudev clean again")
    print(f"removed local tags: {', '.join(removed)}" if removed else "no local tags to remove")
    return 0


def cmd_standins(request: Request) -> int:
    from pudev.building.cabundle import resolve_ca_bundle
    from pudev.devtools.standins import build_standins

    require_platform(request.options.platform)  # a typo would otherwise build nothing, silently
    ca_bundle = resolve_ca_bundle(request.build.ca_bundle, disabled=request.build.no_ca_bundle)
    try:
        for line in build_standins(ca_bundle, platform=request.options.platform, profile=request.options.profile):
            print(line)
    except subprocess.CalledProcessError as error:  # debootstrap's or tar's own words are above this line
        tool = Path(str(error.cmd[0] if isinstance(error.cmd, list) else error.cmd).split()[0]).name
        raise PudevError(f"`{tool}` failed (exit {error.returncode}) while building the stand-ins: its messages are "
                         "above; fix what they name (the network, the disk), then run pudev standins again") from None
    return 0


def cmd_profiles(request: Request) -> int:
    from pudev.config.profiles import profile_names

    print("\n".join(profile_names()))
    return 0


def cmd_lock(request: Request) -> int:
    from pudev.devtools.lock import write_locks

    selected = resolve(request.selection, require_names=False)
    chosen = list(selected.variants) or selected.matrix.every_build()
    # A lock shared by several variants is resolved for all of them, whichever one was named.
    names = {variant.lock for variant in chosen}
    sharing = [variant for variant in selected.matrix.every_build() if variant.lock in names]
    sharing += [variant for variant in chosen if variant not in sharing]  # a profile's own build
    for path in write_locks(sharing, without_base=request.options.without_base):
        print(f"wrote {path}")
    return 0


def cmd_new_torch(request: Request) -> int:
    from pudev.devtools.new_torch.command import Options, run

    option = request.options
    return run(Options(version=option.version, registry=option.registry, torch_index=option.torch_index,
                       variants_file=Path(option.variants_file) if option.variants_file else None,
                       dry_run=option.dry_run, check=option.check, without_base=option.without_base), sys.stdout)


def cmd_changelog(request: Request) -> int:
    from pudev.common.inputs import InputFile
    from pudev.reports.changelog import checked_date, from_manifests, read_manifest_argument, today, with_entry

    option = request.options
    date = checked_date(option.date, "--date") if option.date else today()
    path = None if option.out == "-" else Path(option.out)
    existing = InputFile(path, "changelog", "--out", "name a Markdown changelog, or - for stdout") \
        if path and path.exists() and path.stat().st_size else None
    changelog = existing.read_text() if existing else ""  # a binary or unreadable file fails before any work
    after = read_manifest_argument(option.after, "AFTER")
    before = [read_manifest_argument(item, "--before") for item in option.before]
    found = from_manifests(after, before, date=date)
    if found is None:
        print("the tag's image holds the same torch, CUDA, toolkits and platforms as before: no entry")
        return 0
    key, text = found
    if path is None:
        print(text)
        return 0
    path.write_text(with_entry(changelog, key, text, source=f"--out {path}", fix="name a new file, or - for stdout"))
    print(f"wrote the entry '{key}' into {path}")
    return 0


HANDLERS = {
    "variants": cmd_variants, "pick": cmd_pick, "plan": cmd_plan, "build": cmd_build, "test": cmd_test,
    "jupyter": cmd_jupyter, "tags": cmd_tags,
    "manifest": cmd_manifest, "push": cmd_push, "promote": cmd_promote, "sbom": cmd_sbom,
    "pin": cmd_pin,
    "matrix": cmd_matrix, "bake": cmd_bake,
    "clean": cmd_clean, "standins": cmd_standins, "profiles": cmd_profiles,
    "lock": cmd_lock, "new-torch": cmd_new_torch, "changelog": cmd_changelog,
}
