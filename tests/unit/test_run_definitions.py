"""docker-compose.yml and the devcontainer point at the default variant's image,
ask for GPUs where there are some, and use the image's user and workspace.
(tests/e2e/test_clients.py brings both up with their real clients.)"""

from __future__ import annotations

import json

from ruamel.yaml import YAML

from pudev.building.plan import local_tag
from pudev.config.loader import load_matrix
from pudev.paths import REPO_ROOT, VARIANTS_FILE


def _default_tag() -> str:
    matrix = load_matrix(VARIANTS_FILE)
    return local_tag(matrix.get(matrix.default_variant))


def test_compose_reserves_gpus_has_a_cpu_service_and_publishes_on_loopback() -> None:
    compose = YAML(typ="safe").load((REPO_ROOT / "docker-compose.yml").read_text())
    gpu, cpu = compose["services"]["dev"], compose["services"]["dev-cpu"]
    for service in (gpu, cpu):
        assert service["image"] == f"${{PUDEV_IMAGE:-{_default_tag()}}}"
        assert ".:/workspace" in service["volumes"]
        assert service["ports"] == ["${JUPYTER_BIND:-127.0.0.1}:${JUPYTER_HOST_PORT:-8888}:8888"]
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    assert "deploy" not in cpu and cpu["profiles"] == ["cpu"]  # `docker compose up` starts only the GPU one


def test_devcontainer_asks_for_gpus_only_where_there_are_some() -> None:
    config = json.loads((REPO_ROOT / ".devcontainer/devcontainer.json").read_text())
    assert config["image"] == f"${{localEnv:PUDEV_IMAGE:{_default_tag()}}}"
    assert config["hostRequirements"]["gpu"] == "optional"
    assert not any("gpus" in arg for arg in config["runArgs"])  # would fail on a host without GPUs
    assert config["remoteUser"] == config["containerUser"] == "dev"
    assert config["updateRemoteUserUID"] is True
    assert config["workspaceFolder"] == "/workspace"
