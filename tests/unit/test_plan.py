from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from dockerfiles import instructions as dockerfile_instructions
from dockerfiles import passed_args
from matrices import WriteMatrix

from pudev.building.input_images import ImageIdentity
from pudev.building.labels import SourceInfo, build_labels, public_url, source_info
from pudev.building.plan import BuildPlan, build_args
from pudev.building.record import RECORD_ARG
from pudev.common.errors import PudevError
from pudev.config.loader import load_matrix, read_variant_file
from pudev.config.model import Variant
from pudev.config.overrides import parse_assignments, parse_toolkit_images
from pudev.config.profiles import load_profile, profile_names
from pudev.config.selection import profile_builds
from pudev.mirror.catalogue import MIRRORS, NO_MIRROR
from pudev.paths import DOCKERFILE, VARIANTS_FILE

SOURCE = SourceInfo(revision="0" * 40, created="2026-01-01T00:00:00Z", url="")
BASE_DIGEST = "sha256:" + "a" * 64


def _plan(variant: Variant, *, ca_bundle: Path | None = None,
          images: dict[str, ImageIdentity] | None = None) -> BuildPlan:
    return BuildPlan(variant, source=SOURCE, lock_sha256="f" * 64, ca_bundle=ca_bundle, images=images or {})


def _arg(args: list[str], name: str) -> str:
    values = [args[i + 1].split("=", 1)[1] for i, a in enumerate(args) if a == "--build-arg" and
              args[i + 1].startswith(name + "=")]
    assert len(values) == 1, name
    return values[0]


def _record(args: list[str]) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(_arg(args, RECORD_ARG))
    return record


def test_plan_passes_the_variant_as_declared(matrix_file: WriteMatrix) -> None:
    variant = load_matrix(matrix_file()).get("cu130")
    args = _plan(variant).docker_args()
    assert _arg(args, "BASE_IMAGE") == "example.com/torch:3.1.0-cuda13.0"
    assert _arg(args, "TOOLKIT_A_IMAGE") == "example.com/cuda:12.9-devel"
    assert _record(args)["toolkits"][1]["arch_list"] == "8.0;9.0;10.0;12.0+PTX"
    assert _arg(args, "DEFAULT_TOOLKIT") == "13.0"
    assert _arg(args, "CUDA_ARCH_LIST") == "8.0;9.0;10.0;12.0+PTX"  # the default toolkit's list
    assert (_arg(args, "PYTHON_VERSION"), _arg(args, "CXX_STANDARD")) == ("3.12", "c++20")
    assert _arg(args, "LOCK") == "torch3.1.0-py3.12.txt"
    assert args[args.index("--tag") + 1] == "example/dev-image:cu130"
    assert "--secret" not in args
    # Each RUN step on the host's network: the engine's per-step bridge sandbox costs ~0.25 s a step.
    assert args[args.index("--network") + 1] == "host"


def _dockerfile_args(*, with_defaults: bool) -> set[str]:
    return passed_args(DOCKERFILE, with_defaults=with_defaults)


def test_every_dockerfile_arg_is_planned_and_nothing_else() -> None:
    matrix = load_matrix(VARIANTS_FILE)
    for variant in matrix.variants.values():
        assert set(build_args(variant)) | {RECORD_ARG} == _dockerfile_args(with_defaults=False)


def test_the_record_step_reads_the_record_alone_and_nothing_earlier_reads_it() -> None:
    """IMAGE_RECORD (it holds the commit) is declared right before the record step, after every package step:
    a new commit or digest invalidates that step and the tools after it, never an earlier layer."""
    instructions = dockerfile_instructions(DOCKERFILE)
    declared = instructions.index(f"ARG {RECORD_ARG}")
    runs = [item for item in instructions[declared:] if item.startswith("RUN ")]
    assert len(runs) == 1 and "pudev.image.record write" in runs[0], runs  # the last step of all
    assert RECORD_ARG in set(re.findall(r"\$\{(\w+)\}", runs[0]))
    assert not any(RECORD_ARG in item for item in instructions[:declared])
    assert any("install-packages.sh" in item for item in instructions[:declared])
    assert any(item.startswith("COPY scripts/pudev ") for item in instructions[:declared])


@pytest.mark.parametrize("name", [*MIRRORS, NO_MIRROR])
def test_the_build_gets_its_mirrors_values_not_its_name(name: str) -> None:
    """No build step looks a mirror up: each gets the index and apt server as values (empty: the base's own)."""
    variant = dataclasses.replace(next(iter(load_matrix(VARIANTS_FILE).variants.values())), build_mirror=name)
    args = build_args(variant)
    mirror = MIRRORS.get(name)
    assert args["BUILD_PYPI_INDEX"] == (mirror.pypi_index if mirror else "")
    assert args["BUILD_APT_MIRROR"] == (mirror.apt_base if mirror else "")
    assert args["BUILD_APT_SECURITY"] == ("upstream" if mirror and mirror.apt_security_upstream else "mirror")
    assert name not in args.values() or name == args.get("MIRROR")


def test_ca_bundle_is_a_secret_never_a_build_arg(tmp_path: Path, matrix_file: WriteMatrix) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    args = _plan(load_matrix(matrix_file()).get("cu130"), ca_bundle=bundle).docker_args()
    assert args[args.index("--secret") + 1] == f"id=ca,src={bundle}"
    assert all("ca.pem" not in args[i + 1] for i, a in enumerate(args) if a in ("--build-arg", "--label"))


def test_shell_command_quotes_and_breaks_lines(matrix_file: WriteMatrix) -> None:
    command = _plan(load_matrix(matrix_file()).get("cu129")).shell_command("docker")
    assert command.startswith("DOCKER_BUILDKIT=1 docker build")
    assert "--build-arg 'CUDA_ARCH_LIST=8.0;9.0;12.0+PTX'" in command


def test_engine_facts_missing_from_a_plan_hold_their_place_and_are_named(matrix_file: WriteMatrix) -> None:
    plan = _plan(load_matrix(matrix_file()).get("cu130"))
    args = plan.docker_args()
    inputs = _record(args)["inputs"]
    assert [inputs[key]["digest"] for key in ("base", "toolkit 12.9", "toolkit 13.0")] == [
        "<BASE_DIGEST>", "<TOOLKIT_A_DIGEST>", "<TOOLKIT_B_DIGEST>"]
    assert "org.opencontainers.image.base.digest=<BASE_DIGEST>" in args and "org.pudev.base.id=<BASE_ID>" in args
    note = plan.pending_note()
    assert note[0] == ("resolved at build time: <BASE_DIGEST> in IMAGE_RECORD, label "
                       "org.opencontainers.image.base.digest; <BASE_ID> in label org.pudev.base.id; "
                       "<TOOLKIT_A_DIGEST> in IMAGE_RECORD; <TOOLKIT_B_DIGEST> in IMAGE_RECORD")
    assert "example.com/torch:3.1.0-cuda13.0, example.com/cuda:12.9-devel, example.com/cuda:13.0-devel" in note[1]
    # The note is read from the command: every placeholder the command holds, and only those.
    assert set(re.findall(r"<[A-Z_]+>", " ".join(args))) == set(re.findall(r"<[A-Z_]+>", note[0]))


def test_engine_facts_known_to_a_plan_are_passed(matrix_file: WriteMatrix) -> None:
    variant = load_matrix(matrix_file()).get("cu130")
    local = {ref: ImageIdentity(digest=f"sha256:{n}", image_id=f"sha256:id{n}")
             for n, ref in enumerate((variant.base_image, *(t.image for t in variant.toolkits)))}
    plan = _plan(variant, images=local)
    args = plan.docker_args()
    inputs = _record(args)["inputs"]
    assert (inputs["base"]["digest"], inputs["toolkit 13.0"]["digest"]) == ("sha256:0", "sha256:2")
    assert "org.opencontainers.image.base.digest=sha256:0" in args and "org.pudev.base.id=sha256:id0" in args
    assert plan.pending_note() == [] and "<" not in " ".join(args)
    # A pinned base not on this engine: its digest is known now, its local id once the build has pulled it.
    pinned = _plan(variant, images={**local, variant.base_image: ImageIdentity(digest=BASE_DIGEST)})
    assert f"org.opencontainers.image.base.digest={BASE_DIGEST}" in pinned.docker_args()
    assert pinned.pending_note()[0] == "resolved at build time: <BASE_ID> in label org.pudev.base.id"
    # A stand-in (built here) has only an id: it is the input's identity, and no digest label is owed.
    standin = _plan(variant, images={**local, variant.base_image: ImageIdentity(image_id="sha256:local")})
    assert _record(standin.docker_args())["inputs"]["base"]["digest"] == "sha256:local"
    assert not any("base.digest" in arg for arg in standin.docker_args())
    assert standin.pending_note() == []


@pytest.mark.parametrize("name", profile_names())
def test_each_profile_overrides_only_what_stand_ins_replace(name: str) -> None:
    profile = load_profile(name)
    allowed = {"torch", "python", "base_image", "build_platform_image", "torch_index", "toolkits", "cuda_arch_list",
               "image", "build_mirror", "lock", "required_tests"}
    for override in profile.overrides:
        assert override.key in allowed or override.key.startswith("toolkit."), override.key
    declared = read_variant_file(VARIANTS_FILE).declared
    for variant in profile_builds(name):
        as_declared = declared.on(profile.variant, variant.platform)
        assert variant.cuda == as_declared.cuda  # torch's CUDA release is what a profile never changes
        assert variant.base == as_declared.base  # a stand-in of the same kind of base
        assert variant.lock.startswith("standin-") and variant.image != as_declared.image
    assert {variant.platform for variant in profile_builds(name)} == set(declared.get(profile.variant).platforms)


def test_override_parsing() -> None:
    parsed = parse_assignments(["torch=2.4.1", "toolkits=11.8, 12.4", "toolkit.12.4.max_gcc=13"])
    assert [(o.key, o.value, o.source) for o in parsed] == [
        ("torch", "2.4.1", "--set torch=2.4.1"), ("toolkits", ["11.8", "12.4"], "--set toolkits=11.8, 12.4"),
        ("toolkit.12.4.max_gcc", 13, "--set toolkit.12.4.max_gcc=13")]
    (image,) = parse_toolkit_images(["12.4=x/y:z"])
    assert (image.key, image.value) == ("toolkit.12.4.image", "x/y:z")


@pytest.mark.parametrize("bad", ["torch", "=2", "cuda_version=12.1", "toolkit.12.4.max_gcc=eleven",
                                 "toolkit.12.4.colour=red"])
def test_invalid_overrides(bad: str) -> None:
    with pytest.raises(PudevError, match=rf"^--set {bad}: invalid override"):
        parse_assignments([bad])


def test_invalid_toolkit_image_shorthand() -> None:
    with pytest.raises(PudevError, match="VERSION=IMAGE"):
        parse_toolkit_images(["nvidia/cuda:12.1"])


@pytest.mark.parametrize(("remote", "url"), [
    ("git@github.com:org/repo.git", "https://github.com/org/repo"),
    ("https://github.com/org/repo.git", "https://github.com/org/repo"),
    ("https://user:token@example.com/org/repo", "https://example.com/org/repo"),
    ("/srv/checkouts/project", ""), ("file:///srv/git/repo.git", ""), ("../repo", ""), ("", ""),
])
def test_the_source_label_is_a_public_url_or_nothing(remote: str, url: str) -> None:
    assert public_url(remote) == url


def test_labels_hold_no_local_path(matrix_file: WriteMatrix, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUDEV_SOURCE_URL", "/home/someone/clone")
    labels = build_labels(load_matrix(matrix_file()).get("cu130"), source_info())
    assert "org.opencontainers.image.source" not in labels
    assert not any(value.startswith("/") for value in labels.values())
