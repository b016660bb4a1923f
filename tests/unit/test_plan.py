from __future__ import annotations

from pathlib import Path

import pytest

from pudev.common.errors import PudevError
from pudev.matrix import load_matrix
from pudev.overrides import parse_overrides, toolkit_image_overrides
from pudev.paths import STANDINS_FILE, VARIANTS_FILE
from pudev.plan import BuildPlan, build_args
from pudev.profiles import load_profile


def _arg(args: list[str], name: str) -> str:
    values = [args[i + 1].split("=", 1)[1] for i, a in enumerate(args) if a == "--build-arg" and
              args[i + 1].startswith(name + "=")]
    assert len(values) == 1, name
    return values[0]


def test_cu118_plan_uses_the_official_images() -> None:
    plan = BuildPlan(load_matrix(VARIANTS_FILE).get("cu118"))
    args = plan.docker_args()
    assert _arg(args, "BASE_IMAGE") == "pytorch/pytorch:2.5.1-cuda11.8-cudnn9-runtime"
    assert _arg(args, "TOOLKIT_A_IMAGE") == "nvidia/cuda:11.8.0-devel-ubuntu22.04"
    assert _arg(args, "TOOLKIT_B_IMAGE") == "nvidia/cuda:12.1.1-devel-ubuntu22.04"
    assert _arg(args, "DEFAULT_TOOLKIT") == "11.8"
    assert args[args.index("--tag") + 1] == "pytorch-universal-dev:cu118"
    assert "--secret" not in args


def test_every_dockerfile_arg_is_planned_and_nothing_else() -> None:
    text = (VARIANTS_FILE.parent / "Dockerfile").read_text()
    declared = {line.split()[1].split("=")[0] for line in text.splitlines() if line.startswith("ARG ")}
    with_defaults = {line.split()[1].split("=")[0] for line in text.splitlines()
                     if line.startswith("ARG ") and "=" in line}
    planned = set(build_args(load_matrix(VARIANTS_FILE).get("cu121")))
    assert planned == declared - with_defaults


def test_ca_bundle_is_a_secret_never_a_build_arg(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    args = BuildPlan(load_matrix(VARIANTS_FILE).get("cu121"), ca_bundle=bundle).docker_args()
    assert args[args.index("--secret") + 1] == f"id=ca,src={bundle}"
    assert not any(str(bundle) in a for a in args if a.startswith(("ARG", "CA")))
    assert all("ca.pem" not in args[i + 1] for i, a in enumerate(args) if a == "--build-arg")


def test_shell_command_quotes_and_breaks_lines() -> None:
    command = BuildPlan(load_matrix(VARIANTS_FILE).get("cu121")).shell_command("docker")
    assert command.startswith("DOCKER_BUILDKIT=1 docker build")
    assert "--build-arg 'CUDA_ARCH_LIST=7.0;7.5;8.0;8.6;8.9;9.0+PTX'" in command


def test_local_profile_overrides_only_base_toolkits_torch_and_naming() -> None:
    profile = load_profile(STANDINS_FILE, "local")
    assert profile.variant == "cu121"
    assert set(profile.overrides) == {
        "torch", "base_image", "toolkits", "default_toolkit", "toolkit.11.8.image", "toolkit.12.4.image",
        "toolkit.12.4.max_gcc", "image", "build_mirror"}
    variant = load_matrix(VARIANTS_FILE, {"cu121": profile.overrides}).get("cu121")
    assert variant.cuda == "12.1" and variant.torch == "2.4.1"
    assert variant.toolkit_versions == ("11.8", "12.4")


def test_override_parsing() -> None:
    assert parse_overrides(["torch=2.4.1", "toolkits=11.8, 12.4", "toolkit.12.4.max_gcc=13"]) == {
        "torch": "2.4.1", "toolkits": ["11.8", "12.4"], "toolkit.12.4.max_gcc": 13}
    assert toolkit_image_overrides(["12.4=x/y:z"]) == {"toolkit.12.4.image": "x/y:z"}


@pytest.mark.parametrize("bad", ["torch", "=2", "cuda_version=12.1", "toolkit.12.4.max_gcc=eleven"])
def test_invalid_overrides(bad: str) -> None:
    with pytest.raises(PudevError, match="invalid override"):
        parse_overrides([bad])


def test_invalid_toolkit_image_shorthand() -> None:
    with pytest.raises(PudevError, match="VERSION=IMAGE"):
        toolkit_image_overrides(["nvidia/cuda:12.1"])
