"""`pudev` on the host: plan, build, test and publish the image variants."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.plan import local_tag
from pudev.selection import add_selection_options, selected_plans, selected_variants

Handler = Callable[[argparse.Namespace], int]


def cmd_variants(args: argparse.Namespace) -> int:
    from pudev.common.table import render_table

    matrix, _ = selected_variants(args, require_names=False)
    rows = []
    for variant in matrix.variants.values():
        default = " (latest)" if variant.name == matrix.default_variant else ""
        toolkits = " + ".join(
            f"{t.version}{'*' if t.version == variant.default_toolkit else ''}" for t in variant.toolkits
        )
        rows.append([variant.name + default, variant.torch, variant.cuda, variant.base_image, toolkits])
    print(render_table(["variant", "torch", "cuda", "base image", "toolkits (* = CUDA_HOME)"], rows))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from pudev import engine

    for plan in selected_plans(args):
        print(f"# {plan.variant.name}: run from any directory")
        print(plan.shell_command(_docker_for_display(engine)))
    return 0


def _docker_for_display(engine: object) -> str:
    try:
        return str(engine.docker_cli())  # type: ignore[attr-defined]
    except PudevError:
        return "docker"


def cmd_build(args: argparse.Namespace) -> int:
    from pudev import engine
    from pudev.builder import run_build
    from pudev.cabundle import resolve_ca_bundle

    _, variants = selected_variants(args)
    resolve_ca_bundle(args.ca_bundle, disabled=args.no_ca_bundle)  # bad input fails before any side effect
    engine.require_daemon()
    for variant in variants:  # labels name the base's digest, so the base must be here first
        engine.ensure_local(variant.base_image)
    for plan in selected_plans(args):
        run_build(plan)
    return 0


def _tags_for(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    from pudev.tags import compute_tags, read_facts

    matrix, variants = selected_variants(args)
    result = []
    for variant in variants:
        facts = read_facts(local_tag(variant))
        result.append((local_tag(variant), compute_tags(facts, variant=variant.name,
                                                        is_default=variant.name == matrix.default_variant)))
    return result


def cmd_tags(args: argparse.Namespace) -> int:
    for _, tags in _tags_for(args):
        print("\n".join(tags))
    return 0


def cmd_manifest(args: argparse.Namespace) -> int:
    from pudev.manifest import write_manifest

    _, variants = selected_variants(args)
    for variant in variants:
        for path in write_manifest(local_tag(variant), Path(args.out), variant.name):
            print(f"wrote {path}")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from pudev.publish import parse_target, publish

    _, variants = selected_variants(args)
    for (image, tags), variant in zip(_tags_for(args), variants, strict=True):
        target = parse_target(args.registry, variant.image)
        digest = publish(image, target, tags)
        print(f"published {target.host}/{target.repository}@{digest}: {', '.join(tags)}")
    return 0


def cmd_pin(args: argparse.Namespace) -> int:
    from pudev.pin import pin_file

    changes = pin_file(Path(args.variants_file))
    for old, new in changes.items():
        print(f"{old} -> {new}")
    print(f"pinned {len(changes)} image(s) in {args.variants_file}")
    return 0


def cmd_matrix(args: argparse.Namespace) -> int:
    from pudev.ciexport import matrix_json

    matrix, _ = selected_variants(args, require_names=False)
    print(matrix_json(matrix))
    return 0


def cmd_bake(args: argparse.Namespace) -> int:
    from pudev.ciexport import bake_hcl

    matrix, _ = selected_variants(args, require_names=False)
    text = bake_hcl(matrix)
    if args.out == "-":
        print(text, end="")
    else:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    return 0


def cmd_bench_build(args: argparse.Namespace) -> int:
    from pudev.benchbuild import bench_build

    args.profile = args.profile or "local"
    _, (variant,) = selected_variants(args)
    compare = Path(args.compare) if args.compare else None
    print(bench_build(Path(args.out), variant, compare))
    print(f"wrote {args.out}")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    from pudev import engine

    matrix, _ = selected_variants(args, require_names=False)
    tags = [local_tag(variant) for variant in matrix.variants.values()]
    engine.run(["rmi", *tags], check=False)
    print(f"removed local tags: {', '.join(tags)}")
    return 0


def cmd_test(args: argparse.Namespace) -> int:
    from pudev.testrun import run_image_tests

    code = 0
    for plan in selected_plans(args):
        junit = Path(args.junit) if args.junit else None
        code = run_image_tests(plan.tag, timeout=args.timeout, junit=junit, cpu_only=args.cpu_only,
                               pytest_args=args.pytest_args)
        if code != 0:
            break
    return code


def cmd_standins(args: argparse.Namespace) -> int:
    from pudev.cabundle import resolve_ca_bundle
    from pudev.standins import build_standins

    for line in build_standins(resolve_ca_bundle(args.ca_bundle, disabled=args.no_ca_bundle)):
        print(line)
    return 0


def cmd_lock(args: argparse.Namespace) -> int:
    from pudev.locking import write_locks

    matrix, variants = selected_variants(args, require_names=False)
    for path in write_locks(variants or list(matrix.variants.values())):
        print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pudev", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Handler, help_text: str, *, names: str = "*") -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(handler=handler)
        add_selection_options(sub, names=names)
        return sub

    command("variants", cmd_variants, "print the variant matrix", names="none")
    command("plan", cmd_plan, "print the exact build command for variants, without running it")
    command("build", cmd_build, "build variants (tags only on success)")
    test = command("test", cmd_test, "run the in-image test suite in a fresh container")
    test.add_argument("--timeout", type=float, default=3600, help="seconds before the run is stopped (default 3600)")
    test.add_argument("--junit", default="", metavar="PATH", help="copy the JUnit XML report here")
    test.add_argument("--cpu-only", action="store_true", help="leave out the GPU half")
    test.epilog = "Arguments after -- go to pytest inside the container; such a run is not recorded as a pass."
    command("tags", cmd_tags, "print the tags of a built image, computed from what is inside it")
    manifest = command("manifest", cmd_manifest, "write a Markdown + JSON build manifest read from the image")
    manifest.add_argument("--out", default="manifests", metavar="DIR", help="output folder (default: manifests)")
    publish = command("publish", cmd_publish, "push a tested image by digest, then apply every tag")
    publish.add_argument("--registry", required=True, metavar="HOST[/ORG]", help="e.g. ghcr.io/my-org")
    command("pin", cmd_pin, "write each base and toolkit image's digest into the variant file", names="none")
    matrix = command("matrix", cmd_matrix, "print the CI build matrix as JSON (the workflow reads it)", names="none")
    matrix.add_argument("--json", action="store_true", help="JSON output (the only format)")
    bake = command("bake", cmd_bake, "generate docker-bake.hcl for `docker buildx bake`", names="none")
    bake.add_argument("--out", default="docker-bake.hcl", metavar="PATH", help="output file, or - for stdout")
    bench = command("bench-build", cmd_bench_build, "measure cold and incremental stand-in builds", names="none")
    bench.add_argument("--out", default="reports/bench-build.json", metavar="PATH", help="JSON result")
    bench.add_argument("--compare", default="", metavar="PATH", help="an earlier JSON result to compare with")
    command("clean", cmd_clean, "remove the locally built variant tags", names="none")
    command("standins", cmd_standins, "build the stand-in images (idempotent)", names="none")
    command("lock", cmd_lock, "regenerate requirements/lock/VARIANT.txt with hashes (all variants by default)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    # Everything after the first `--` belongs to pytest (pudev test VARIANT -- -k name).
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    args.pytest_args = extra
    try:
        return int(args.handler(args))
    except PudevError as error:
        print(f"pudev: error: {error}", file=sys.stderr)
        if error.detail:
            print(error.detail.rstrip("\n"), file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("pudev: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
