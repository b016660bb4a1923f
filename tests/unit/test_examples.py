"""The examples users copy (examples/): the Kubernetes manifests pass a maintained schema validator
(kubernetes-validate, strict), keep the cluster rules the distributed check needs, and run exactly the
`pudev dist` line that the Slurm script runs and tests/e2e/test_multinode.py runs."""

from __future__ import annotations

import copy
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from ruamel.yaml import YAML

from pudev.image.dist.settings import parser, resolve
from pudev.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
MANIFEST = EXAMPLES / "kubernetes" / "pudev-dist.yaml"
SBATCH = EXAMPLES / "slurm" / "pudev-dist.sbatch"
K8S_VERSION = "1.30.0"  # oldest release still in wide use that this validator ships; the newest is checked too


def _documents(path: Path) -> list[dict[str, Any]]:
    return [dict(doc) for doc in YAML(typ="safe").load_all(path.read_text()) if doc]


def _job() -> dict[str, Any]:
    return next(doc for doc in _documents(MANIFEST) if doc["kind"] == "Job")


def _container() -> dict[str, Any]:
    return dict(_job()["spec"]["template"]["spec"]["containers"][0])


def _env() -> dict[str, Any]:
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in _container()["env"]}


def normalized(line: str) -> str:
    return " ".join(line.replace("\\\n", " ").split())


def kubernetes_line() -> str:
    container = _container()
    assert container["command"] == ["sh", "-c"]
    return normalized(container["args"][0])


def slurm_line() -> str:
    match = re.search(r"exec pudev dist [^']*", SBATCH.read_text())
    assert match, f"{SBATCH} runs no `exec pudev dist` line"
    return normalized(match.group(0))


@pytest.mark.parametrize("path", sorted((EXAMPLES / "kubernetes").glob("*.yaml")), ids=lambda p: p.name)
@pytest.mark.parametrize("version", [K8S_VERSION, kubernetes_validate.latest_version()])
def test_manifests_pass_the_kubernetes_schema(path: Path, version: str) -> None:
    for document in _documents(path):
        kubernetes_validate.validate(document, version, strict=True)


def test_the_validator_rejects_a_broken_manifest() -> None:
    broken = copy.deepcopy(_job())
    broken["spec"]["template"]["spec"]["containers"][0]["resource"] = {}  # a typo of `resources`
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)
    broken = copy.deepcopy(_job())
    broken["spec"]["completions"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_the_job_keeps_the_cluster_rules() -> None:
    documents = {doc["kind"]: doc for doc in _documents(MANIFEST)}
    job, service = documents["Job"], documents["Service"]
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    env, container = _env(), _container()
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == int(env["NNODES"])
    assert pod["securityContext"]["runAsUser"] not in (0, 1000)  # neither root nor the image's own user
    assert container["resources"]["limits"]["nvidia.com/gpu"] == int(env["NPROC_PER_NODE"])  # one rank per GPU
    shm = next(mount for mount in container["volumeMounts"] if mount["mountPath"] == "/dev/shm")
    volume = next(volume for volume in pod["volumes"] if volume["name"] == shm["name"])
    assert volume["emptyDir"]["medium"] == "Memory"
    # Pod 0 hosts the store; its DNS name comes from the headless Service and the pods' subdomain.
    assert service["spec"]["clusterIP"] == "None" and pod["subdomain"] == service["metadata"]["name"]
    assert service["spec"]["selector"] == {"job-name": job["metadata"]["name"]}
    host, port = env["RDZV_ENDPOINT"].rsplit(":", 1)
    assert host == f"{job['metadata']['name']}-0.{service['metadata']['name']}"
    assert int(port) == service["spec"]["ports"][0]["port"]
    assert env["NODE_INDEX"]["fieldRef"]["fieldPath"].endswith("['batch.kubernetes.io/job-completion-index']")
    assert env["LOCAL_ADDR"]["fieldRef"]["fieldPath"] == "status.podIP"


def test_the_jupyterlab_pod_is_private_has_a_gpu_shm_and_a_secret_token() -> None:
    documents = {doc["kind"]: doc for doc in _documents(EXAMPLES / "kubernetes" / "jupyterlab.yaml")}
    pod, service = documents["Pod"], documents["Service"]
    # The work outlives the pod: its claim is in a file `kubectl delete -f jupyterlab.yaml` does not touch.
    assert "PersistentVolumeClaim" not in documents
    (claim,) = _documents(EXAMPLES / "kubernetes" / "jupyterlab-workspace.yaml")
    container = pod["spec"]["containers"][0]
    assert container["command"] == ["start-jupyter"]  # no entrypoint: any uid, as the cluster starts it
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    token = next(item for item in container["env"] if item["name"] == "JUPYTER_TOKEN")
    assert "value" not in token and token["valueFrom"]["secretKeyRef"]["key"] == "token"  # never in the manifest
    mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"
    assert volumes[mounts["/workspace"]]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    # Reached through kubectl port-forward only: a ClusterIP Service that selects this pod's named port.
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    named = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert named[service["spec"]["ports"][0]["targetPort"]] == 8888


def test_kubernetes_and_slurm_run_one_command() -> None:
    assert kubernetes_line() == slurm_line()
    assert kubernetes_line().startswith("exec pudev dist ")


def test_every_variable_of_the_command_is_set() -> None:
    used = set(re.findall(r"\$(\w+)", kubernetes_line()))
    assert used == set(_env())
    script = SBATCH.read_text()
    for name in used:
        assert re.search(rf"(export |[\s']){name}=", script), f"{SBATCH.name} never sets {name}"


def test_the_command_is_valid_pudev_dist_input() -> None:
    values = {"NNODES": "2", "NPROC_PER_NODE": "8", "NODE_INDEX": "1", "RDZV_ENDPOINT": "pudev-dist-0.pudev-dist:29400",
              "RDZV_ID": "pudev-dist", "LOCAL_ADDR": "10.0.0.2", "JOIN_TIMEOUT": "600"}
    words = shlex.split(re.sub(r"\$(\w+)", lambda match: values[match.group(1)], kubernetes_line()))
    assert words[:3] == ["exec", "pudev", "dist"]
    settings = resolve(parser().parse_args(words[3:]), lambda: 8)
    assert (settings.nnodes, settings.nproc_per_node, settings.backend, settings.node_index) == (2, 8, "nccl", 1)
    assert (settings.local_addr, settings.join_timeout) == ("10.0.0.2", 600)


def test_the_sbatch_script_uses_pyxis_and_is_sound_shell() -> None:
    script = SBATCH.read_text()
    assert re.search(r"^srun .*--container-image=", script, re.MULTILINE)
    assert "#SBATCH --ntasks-per-node=1" in script  # one launcher per node; it starts the ranks
    checker = shutil.which("shellcheck")
    if checker is None:
        pytest.fail("shellcheck is not installed: sudo apt-get install shellcheck (make host-setup does it)")
    result = subprocess.run([checker, "--shell=bash", str(SBATCH)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_the_read_only_jupyterlab_pod_runs_any_uid_with_every_mount_it_needs() -> None:
    """readOnlyRootFilesystem, a uid that is not the image's, and an emptyDir at the home (HOME for any uid:
    ~/.local, ~/.cache) and at /tmp; the rest as jupyterlab.yaml. tests/e2e/test_any_user.py runs these mounts."""
    documents = {doc["kind"]: doc for doc in _documents(EXAMPLES / "kubernetes" / "jupyterlab-readonly.yaml")}
    spec = documents["Pod"]["spec"]
    (container,) = spec["containers"]
    pod = spec["securityContext"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["runAsUser"] not in (0, 1000) and pod["runAsGroup"] == pod["fsGroup"] and pod["runAsNonRoot"]
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    mounted = {mount["mountPath"]: volumes[mount["name"]] for mount in container["volumeMounts"]}
    for path in ("/home/dev", "/tmp"):
        assert "emptyDir" in mounted[path] and "medium" not in mounted[path]["emptyDir"], path
    assert container["command"] == ["start-jupyter"]
    assert "persistentVolumeClaim" in mounted["/workspace"] and "emptyDir" in mounted["/dev/shm"]
    assert documents["Service"]["spec"]["type"] == "ClusterIP"
