"""The `pudev` command line: every command, its options, and the shared
variant-selection and build options."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pudev.cli.arguments import OutputPath
from pudev.common.one_line_parser import OneLineParser

if TYPE_CHECKING:
    from pudev.cli.request import Request

Handler = Callable[["Request"], int]


# The option groups a command may use; each command lists only those it reads, so its --help is true.
# Overrides go with selection: they change a variant's image name, and so its local tag.
SELECT, BUILD, CA = "select", "build", "ca"


def add_selection_options(parser: argparse.ArgumentParser, uses: frozenset[str]) -> None:
    if SELECT in uses:
        group = parser.add_argument_group("variant selection and overrides")
        group.add_argument("--variants-file", default="", metavar="PATH",
                           help="the matrix file (default: docker/variants.toml)")
        group.add_argument("--profile", default="", help="a named override set, e.g. `local` (the stand-in build)")
        group.add_argument("--platform", default="", metavar="PLATFORM",
                           help="the platform to build or test for, one of the variant's `platforms` "
                                "(default: the profile's, else the variant's first; another one than this "
                                "host's runs under binfmt emulation)")
        group.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE",
                           help="override a variant field, e.g. --set torch=2.4.1")
        group.add_argument("--base-image", default="", metavar="REF", help="same as --set base_image=REF")
        group.add_argument("--toolkit-image", action="append", default=[], metavar="VERSION=REF",
                           help="same as --set toolkit.VERSION.image=REF")
        group.add_argument("--mirror", default="", help="same as --set mirror=NAME (aliyun, tuna, none)")
        group.add_argument("--build-mirror", default="", help="same as --set build_mirror=NAME")
        group.add_argument("--pull-mirror", default="", metavar="PREFIX",
                           help="pull base and toolkit images through a pull-through cache of Docker Hub, "
                                "e.g. a Harbor proxy-cache project: harbor.example.com/dockerhub")
    if BUILD in uses or CA in uses:
        build = parser.add_argument_group("build options")
        ca = build.add_mutually_exclusive_group()
        ca.add_argument("--ca-bundle", default=None, metavar="PATH",
                        help="extra CA bundle for the build's downloads (default: $PIP_CERT, $SSL_CERT_FILE, "
                             "$REQUESTS_CA_BUNDLE); passed as a BuildKit secret")
        ca.add_argument("--no-ca-bundle", action="store_true",
                        help="pass no CA bundle even if the environment names one")
    if BUILD in uses:
        build.add_argument("--cache-from", action="append", default=[], metavar="SPEC",
                           help="BuildKit cache source, e.g. type=registry,ref=ghcr.io/org/cache:cu121")
        build.add_argument("--cache-to", action="append", default=[], metavar="SPEC",
                           help="BuildKit cache export (needs buildx with a docker-container builder)")
        build.add_argument("--no-cache", action="store_true", help="run every build step again (cache mounts stay)")


def build_parser(handlers: Mapping[str, Handler], description: str) -> argparse.ArgumentParser:  # noqa: PLR0915
    parser = OneLineParser(prog="pudev", description=description)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, *, names: str = "variant names, or `all`", metavar: str = "VARIANT",
                uses: frozenset[str] = frozenset({SELECT})) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(handler=handlers[name])
        if names:
            sub.add_argument("names", nargs="*", metavar=metavar, help=names)
        add_selection_options(sub, uses)
        return sub

    planning = frozenset({SELECT, BUILD})

    variants = command("variants", "print the variant matrix", names="")
    variants.add_argument("--markdown", action="store_true", help="the README's variant table")
    pick = command("pick", "which tag to take on this host: reads the GPUs and the driver (NVML, else nvidia-smi), "
                           "says which tags run here and why each other one does not, and what would break a first "
                           "`docker run --gpus`", names="", uses=frozenset())
    pick.add_argument("--variants-file", default="", metavar="PATH",
                      help="the matrix file (default: docker/variants.toml)")
    answer = pick.add_mutually_exclusive_group()
    answer.add_argument("--json", action="store_true", help="the answer as JSON")
    answer.add_argument("--tag", action="store_true",
                        help="only the tag to take, for scripts (`make build` and `make jupyter` read it)")
    command("plan", "print the exact build command for variants, without running it", uses=planning)
    command("build", "build variants (tags only on success)", uses=planning)
    test = command("test", "run the in-image suite in a fresh container: VARIANT (a local build) or "
                           "REGISTRY/REPO@sha256:... (a candidate: pulled, and each half's outcome recorded there)",
                   names="variant names (or `all`), or candidates by digest", metavar="VARIANT|REF")
    test.add_argument("--timeout", type=float, default=3600, help="seconds before the run is stopped (default 3600)")
    test.add_argument("--junit", default="", metavar="PATH", type=OutputPath("--junit", "junit", makes_folders=True),
                      help="copy the JUnit XML report here")
    half = test.add_mutually_exclusive_group()
    half.add_argument("--cpu-only", action="store_true", help="the CPU half only")
    half.add_argument("--gpu-only", action="store_true", help="the GPU half only (it must find a GPU)")
    half.add_argument("--platform-only", action="store_true",
                      help="only the CPU checks that prove the image on its platform: toolkits, compilers, a CUDA "
                           "extension, the shell and tools (what an emulated platform can afford; recorded as "
                           "`platform`, which required_tests may name)")
    test.add_argument("--reuse-local-pass", action="store_true",
                      help="for a candidate by digest: when this machine's `pudev test` already passed the same "
                           "image id (the same image, byte for byte), record that pass instead of running again")
    test.epilog = "Arguments after -- go to pytest inside the container; such a run is not recorded."
    jupyter = command("jupyter", "run JupyterLab on a built image with the quick start's flags: GPUs where the "
                                 "host has them, --shm-size, the port on 127.0.0.1, this folder as /workspace, "
                                 "your user ids, --rm", names="a built variant (its local tag)")
    jupyter.add_argument("--image", default="", metavar="REF", help="any image this engine has, e.g. one you pulled")
    jupyter.add_argument("--port", type=int, default=8888, help="the port on 127.0.0.1 (default 8888)")
    jupyter.add_argument("--workspace", default=".", metavar="DIR", help="mounted at /workspace (default: this folder)")
    command("tags", "print the tags of a built image, computed from what is inside it")
    manifest = command("manifest", "write a Markdown + JSON build manifest read from the image")
    # --diff prints what changed; it writes nothing, so it takes no --out.
    manifest_mode = manifest.add_mutually_exclusive_group()
    manifest_mode.add_argument("--out", default="manifests", metavar="DIR",
                               type=OutputPath("--out", "manifest", folder=True),
                               help="output folder (default: manifests)")
    manifest_mode.add_argument("--diff", nargs=2, metavar=("A", "B"),
                               help="what changed from A to B (manifest JSON files or images)")
    push = command("push", "push a built variant once, by digest, to REGISTRY/IMAGE-candidates")
    push.add_argument("--registry", required=True, metavar="HOST[/ORG]", help="e.g. ghcr.io/my-org")
    push.add_argument("--ref-file", default="", metavar="PATH", type=OutputPath("--ref-file", "reference"),
                      help="also write the candidate reference here")
    command("promote", "copy the candidates that passed their tests (by digest) to the release repository "
                                 "and tag them: one image, or for a variant built for several platforms one OCI "
                                 "index of them",
                      names="the candidates, REGISTRY/REPO-candidates@sha256:... (what `pudev push` printed), one "
                            "per platform the variant is built for", metavar="CANDIDATE",
                      uses=frozenset())  # what promotion takes (required tests, latest) is read from the candidates
    sbom = command("sbom", "a CycloneDX SBOM of an image: write it, --push it to the registry, or --fetch it",
                   names="a built variant's image tag, or REGISTRY/REPO@sha256:...", metavar="IMAGE", uses=frozenset())
    sbom.add_argument("--out", default="-", metavar="PATH", type=OutputPath("--out", "sbom", stdout=True),
                      help="where to write it (default: stdout)")
    # --push attaches the SBOM written here; --fetch reads the one attached before: one or the other.
    sbom_mode = sbom.add_mutually_exclusive_group()
    sbom_mode.add_argument("--push", action="store_true", help="attach it to REGISTRY/REPO@sha256:... as an artifact")
    sbom_mode.add_argument("--fetch", action="store_true", help="fetch the SBOM attached to REGISTRY/REPO@sha256:...")
    pin = command("pin", "write each base and toolkit image's digest into the variant file", names="",
                  uses=frozenset())
    pin.add_argument("--variants-file", default="", metavar="PATH",
                     help="the matrix file (default: docker/variants.toml)")
    matrix = command("matrix", "print the CI build matrix as JSON (the workflow reads it)", names="")
    matrix.add_argument("--publish", action="store_true",
                        help="one entry per variant with its platforms (the publish jobs), not per variant and "
                             "platform (the build jobs)")
    bake = command("bake", "write docker-bake.json for `docker buildx bake`: each target the build `pudev build` "
                           "runs, input digests included (pinned, pulled here, or asked of the registry)", names="",
                   uses=planning)
    bake.add_argument("--out", default="docker-bake.json", metavar="PATH",
                      type=OutputPath("--out", "bake", stdout=True), help="output file, or - for stdout")
    _add_maintenance_commands(command)
    return parser


def _add_maintenance_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    """The commands that maintain the project rather than use an image: stand-ins, locks, release day."""
    new_torch = command("new-torch", "move the newest line to a torch release on the day it ships: ask the package "
                                     "index and the registry, then update the matrix, the locks per platform, the "
                                     "stand-ins, the generated tables and the changelog", names="", uses=frozenset())
    new_torch.add_argument("version", nargs="?", default="", metavar="VERSION",
                           help="the torch release to move to (default: the newest on the package index)")
    new_torch.add_argument("--variants-file", default="", metavar="PATH",
                           help="the matrix file (default: docker/variants.toml)")
    new_torch.add_argument("--registry", default="docker.io", metavar="HOST",
                           help="where the official images are (default: docker.io)")
    new_torch.add_argument("--torch-index", default="https://download.pytorch.org/whl", metavar="URL",
                           help="torch's own index, the folder of its cuXYZ indexes: which CUDA builds a release has "
                                "(default: https://download.pytorch.org/whl)")
    # --check asks and prints; --dry-run makes the whole move in a copy: one or the other.
    mode = new_torch.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="only print where the release stands: a first line `current|waiting|ready VERSION: "
                           "...`, then one line per variant (current, waiting and for what, ready, dropped)")
    mode.add_argument("--dry-run", action="store_true",
                      help="make the whole move in a scratch copy, print what it would change (every file, "
                           "locks included, and the diffs) and write nothing")
    new_torch.add_argument("--without-base", action="store_true",
                           help="lock without the base images' packages (where they cannot be pulled)")
    changelog = command("changelog", "write the CHANGELOG.md entry of a tag that moved, from the manifests of the "
                                     "image it points at now and the ones its tags pointed at before (what "
                                     "`pudev manifest --diff` compares)",
                        names="", uses=frozenset())
    changelog.add_argument("after", metavar="AFTER", help="the image now behind the tag: a manifest JSON or an image")
    changelog.add_argument("--before", action="append", default=[], metavar="MANIFEST",
                           help="an image one of AFTER's tags pointed at before (a manifest JSON or an image); "
                                "a tag none of them carried is new")
    changelog.add_argument("--date", default="", metavar="YYYY-MM-DD", help="the entry's date (default: today)")
    changelog.add_argument("--out", default="CHANGELOG.md", metavar="PATH",
                           type=OutputPath("--out", "changelog", stdout=True),
                           help="the changelog to write the entry into, or - for stdout (default: CHANGELOG.md)")
    command("clean", "remove the locally built variant tags", names="")
    standins = command("standins", "build the stand-in images (idempotent)", names="", uses=frozenset({CA}))
    standins.add_argument("--platform", default="", metavar="PLATFORM",
                          help="only the stand-ins for this platform (default: every platform's)")
    standins.add_argument("--profile", default="", metavar="NAME",
                          help="only the stand-ins `pudev build --profile NAME` builds from, with --platform's "
                               "(default: every profile's)")
    command("profiles", "list the stand-in profiles (docker/standins/standins.toml)", names="", uses=frozenset())
    lock = command("lock", "regenerate the hashed requirement locks (all variants by default, or --profile NAME)")
    lock.add_argument("--without-base", action="store_true",
                      help="resolve without the base images' packages (where the bases cannot be pulled; the "
                           "build still refuses a lock that would change what its base ships)")
