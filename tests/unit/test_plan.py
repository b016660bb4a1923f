from __future__ import annotations

from pathlib import Path

import pytest
from matrices import WriteMatrix

from pudev.build.labels import SourceInfo, build_labels, public_url, source_info
from pudev.build.plan import ENGINE_INPUTS, PLANNED_INPUTS, BuildPlan, ImageIdentity, build_args
from pudev.common.errors import PudevError
from pudev.config.loader import load_matrix
from pudev.config.model import Variant
from pudev.config.overrides import parse_assignments, parse_toolkit_images
from pudev.config.profiles import load_profile, profile_names
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


def test_plan_passes_the_variant_as_declared(matrix_file: WriteMatrix) -> None:
    variant = load_matrix(matrix_file()).get("cu130")
    args = _plan(variant).docker_args()
    assert _arg(args, "BASE_IMAGE") == "example.com/torch:3.1.0-cuda13.0"
    assert _arg(args, "TOOLKIT_A_IMAGE") == "example.com/cuda:12.9-devel"
    assert _arg(args, "TOOLKIT_B_ARCH_LIST") == "8.0;9.0;10.0;12.0+PTX"
    assert _arg(args, "DEFAULT_TOOLKIT") == "13.0"
    assert _arg(args, "CUDA_ARCH_LIST") == "8.0;9.0;10.0;12.0+PTX"  # the default toolkit's list
    assert (_arg(args, "PYTHON_VERSION"), _arg(args, "CXX_STANDARD")) == ("3.12", "c++20")
    assert _arg(args, "LOCK") == "torch3.1.0-py3.12.txt"
    assert args[args.index("--tag") + 1] == "example/dev-image:cu130"
    assert "--secret" not in args


def test_every_dockerfile_arg_is_planned_and_nothing_else() -> None:
    text = DOCKERFILE.read_text()
    declared = {line.split()[1].split("=")[0] for line in text.splitlines() if line.startswith("ARG ")}
    with_defaults = {line.split()[1].split("=")[0] for line in text.splitlines()
                     if line.startswith("ARG ") and "=" in line}
    matrix = load_matrix(VARIANTS_FILE)
    for variant in matrix.variants.values():
        assert set(build_args(variant)) | set(PLANNED_INPUTS) | set(ENGINE_INPUTS) == declared - with_defaults


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


def test_engine_facts_missing_from_a_plan_are_named_not_guessed(matrix_file: WriteMatrix) -> None:
    plan = _plan(load_matrix(matrix_file()).get("cu130"))
    args = plan.docker_args()
    assert not any("base.digest" in arg for arg in args)
    for name in ENGINE_INPUTS:  # bare: docker takes the value from the environment, pudev build passes it
        assert args[args.index(name) - 1] == "--build-arg"
    note = "\n".join(plan.pending_note())
    assert "resolved at build time: BASE_DIGEST, TOOLKIT_A_DIGEST, TOOLKIT_B_DIGEST" in note
    assert "org.opencontainers.image.base.digest, org.pudev.base.id" in note
    assert "example.com/torch:3.1.0-cuda13.0" in note


def test_engine_facts_known_to_a_plan_are_passed(matrix_file: WriteMatrix) -> None:
    variant = load_matrix(matrix_file()).get("cu130")
    local = {ref: ImageIdentity(digest=f"sha256:{n}", image_id=f"sha256:id{n}")
             for n, ref in enumerate((variant.base_image, *(t.image for t in variant.toolkits)))}
    plan = _plan(variant, images=local)
    args = plan.docker_args()
    assert (_arg(args, "BASE_DIGEST"), _arg(args, "TOOLKIT_B_DIGEST")) == ("sha256:0", "sha256:2")
    assert "org.opencontainers.image.base.digest=sha256:0" in args and "org.pudev.base.id=sha256:id0" in args
    assert plan.pending_note() == []
    # A pinned base not on this engine: its digest is known now, its local id once the build has pulled it.
    pinned = _plan(variant, images={**local, variant.base_image: ImageIdentity(digest=BASE_DIGEST)})
    assert f"org.opencontainers.image.base.digest={BASE_DIGEST}" in pinned.docker_args()
    assert pinned.pending_note()[0] == "resolved at build time: no build argument; labels org.pudev.base.id"
    # A stand-in (built here) has only an id: it is the input's identity, and no digest label is owed.
    standin = _plan(variant, images={**local, variant.base_image: ImageIdentity(image_id="sha256:local")})
    assert _arg(standin.docker_args(), "BASE_DIGEST") == "sha256:local"
    assert standin.pending_note() == []


@pytest.mark.parametrize("name", profile_names())
def test_each_profile_overrides_only_what_stand_ins_replace(name: str) -> None:
    profile = load_profile(name)
    allowed = {"torch", "python", "base_image", "toolkits", "cuda_arch_list", "image", "build_mirror", "lock",
               "required_tests"}
    for override in profile.overrides:
        assert override.key in allowed or override.key.startswith("toolkit."), override.key
    variant = load_matrix(VARIANTS_FILE, {profile.variant: list(profile.overrides)}).get(profile.variant)
    declared = load_matrix(VARIANTS_FILE).get(profile.variant)
    assert variant.cuda == declared.cuda  # torch's CUDA release is what a profile never changes
    assert variant.lock.startswith("standin-") and variant.image != declared.image


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
