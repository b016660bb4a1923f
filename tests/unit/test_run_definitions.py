"""docker-compose.yml and the devcontainer point at the default variant's image,
reserve GPUs, and use the image's user and workspace."""

from __future__ import annotations

import json

from ruamel.yaml import YAML

from pudev.matrix import load_matrix
from pudev.paths import REPO_ROOT, VARIANTS_FILE
from pudev.plan import local_tag


def _default_tag() -> str:
    matrix = load_matrix(VARIANTS_FILE)
    return local_tag(matrix.get(matrix.default_variant))


def test_compose_reserves_gpus_and_mounts_the_workspace() -> None:
    compose = YAML(typ="safe").load((REPO_ROOT / "docker-compose.yml").read_text())
    service = compose["services"]["dev"]
    assert service["image"] == f"${{PUDEV_IMAGE:-{_default_tag()}}}"
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    assert ".:/workspace" in service["volumes"]
    assert service["ports"] == ["${JUPYTER_HOST_PORT:-8888}:8888"]


def test_devcontainer_uses_gpus_and_the_image_user() -> None:
    config = json.loads((REPO_ROOT / ".devcontainer/devcontainer.json").read_text())
    assert config["image"] == f"${{localEnv:PUDEV_IMAGE:{_default_tag()}}}"
    assert "--gpus=all" in config["runArgs"]
    assert config["remoteUser"] == config["containerUser"] == "dev"
    assert config["updateRemoteUserUID"] is True
    assert config["workspaceFolder"] == "/workspace"
