"""Any user id and no entrypoint, from outside: the built stand-in image started the way
clusters start it. Kubernetes runAsUser N without a group (uid N, gid N), OpenShift's
random uid with gid 0, and pyxis/enroot or a Kubernetes `command:`, which bypass the
entrypoint (--entrypoint ""). Also: every input the entrypoint and JupyterLab's start
read, sent bad, gives one line and a non-zero exit at once, and so does a read-only root without
its home mount. The Kubernetes read-only example runs, as the docker flags its mounts translate to."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from e2e_support import QUICK_HEALTH, LocalImage, run_removed
from jupyter_client_lite import JupyterServer, free_port

from pudev.engine.containers import TrackedContainer
from pudev.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.slow]
HEALTH = "{{.State.Health.Status}}"
NO_ENTRYPOINT = ["--entrypoint", ""]
USERS = {"4242:4242": ["--user", "4242:4242"], "4242:0": ["--user", "4242:0"]}
SUITE_RUNS = {
    "uid 4242:4242": USERS["4242:4242"],
    "uid 4242:0": USERS["4242:0"],
    "uid 4242:0, no entrypoint": [*NO_ENTRYPOINT, *USERS["4242:0"]],
    "uid 4242:4242, no entrypoint": [*NO_ENTRYPOINT, *USERS["4242:4242"]],
    "image user, no entrypoint": NO_ENTRYPOINT,
}


def _run(image: LocalImage, options: Sequence[str], command: Sequence[str], *,
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_removed(image.tag, options, command, timeout=timeout, purpose="anyuser")


@pytest.mark.parametrize("run", SUITE_RUNS)
def test_the_any_user_part_of_the_suite_passes(newest_image: LocalImage, run: str) -> None:
    """zsh, bash, python, pip, jupyter and cuda-switch; HOME, the mirror, ENV and /workspace
    (tests/image/test_any_user.py), as each of those users and without the entrypoint."""
    result = _run(newest_image, SUITE_RUNS[run], ["pudev", "selftest", "--", "-q", "-m", "anyuser"], timeout=1200)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in summary and not any(word in summary for word in ("failed", "skipped", "error")), summary


@pytest.mark.parametrize("user", USERS)
def test_the_environment_is_the_same_without_the_entrypoint(newest_image: LocalImage, user: str) -> None:
    """ENV, Python's and the shells' start-up files and the system-wide files give what the entrypoint
    would (the image ships no start hooks, the one thing only the entrypoint runs)."""
    # HOSTNAME differs per container; PWD is what the entrypoint's sh exports for the directory it was in.
    probe = ["python", "-c", "import json, os, subprocess; env = dict(os.environ); env.pop('HOSTNAME'); "
             "env.pop('PWD', None); "
             "pip = subprocess.run(['pip', 'config', 'list'], capture_output=True, text=True).stdout; "
             "print(json.dumps({'env': env, 'pip': pip}))"]
    with_entrypoint = json.loads(_run(newest_image, USERS[user], probe).stdout)
    without = json.loads(_run(newest_image, [*NO_ENTRYPOINT, *USERS[user]], probe).stdout)
    assert without == with_entrypoint
    env = without["env"]
    assert env["HOME"] != "/" and env["USER"] == "uid-4242"
    assert env["CUDA_HOME"].startswith("/usr/local/cuda-") and env["TORCH_CUDA_ARCH_LIST"]
    assert env["PIP_CONSTRAINT"] == env["UV_CONSTRAINT"] == "/etc/pudev/torch-constraints.txt"
    assert "/usr/local/cuda/bin" in env["PATH"].split(":")
    assert "global.index-url='https://mirrors.aliyun.com/pypi/simple/'" in without["pip"]


@pytest.mark.parametrize(("user", "expected_home"), [("4242:4242", "/tmp/home-4242"), ("4242:0", "/home/dev")])
def test_home_falls_back_and_workspace_follows_group_0(newest_image: LocalImage, user: str, expected_home: str) -> None:
    script = 'echo "$HOME"; touch /workspace/made-here 2>/dev/null && stat -c %g /workspace/made-here || echo denied'
    lines = _run(newest_image, USERS[user], ["sh", "-c", script]).stdout.split()
    assert lines == [expected_home, "0" if user.endswith(":0") else "denied"]


JUPYTER_RUNS = {"4242:4242": (USERS["4242:4242"], []), "4242:0": (USERS["4242:0"], []),
                "4242:0, no entrypoint": ([*NO_ENTRYPOINT, *USERS["4242:0"]], ["start-jupyter"])}


@contextmanager
def _jupyterlab(image: LocalImage, purpose: str, options: Sequence[str],
                command: Sequence[str]) -> Iterator[tuple[TrackedContainer, JupyterServer]]:
    """JupyterLab started with `options`, healthy and answering its token; removed afterwards."""
    token, port = secrets.token_hex(16), free_port()
    container = TrackedContainer(image.tag, purpose=purpose, options=[
        *QUICK_HEALTH, "--publish", f"127.0.0.1:{port}:8888", "--env", f"JUPYTER_TOKEN={token}", *options])
    with container:
        container.start(list(command))
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy", container.logs()[-3000:]
        server = JupyterServer(port=port, token=token)
        assert server.request("GET", "api/status")[0] == 200
        yield container, server


@pytest.mark.parametrize("run", JUPYTER_RUNS)
def test_jupyterlab_starts_for_any_user_and_wants_the_token(newest_image: LocalImage, run: str) -> None:
    options, command = JUPYTER_RUNS[run]
    with _jupyterlab(newest_image, "anyuser-jupyter", options, command) as (container, server):
        assert server.request("GET", "api/status", token="")[0] == 403
        owner = container.exec(["ps", "-o", "uid=", "-C", "jupyter-lab"]).stdout.split()
        assert owner == ["4242"], owner


BAD_INPUTS = {
    "PUDEV_UID=abc": (["--user", "0", "--env", "PUDEV_UID=abc"], "pudev-entrypoint: PUDEV_UID='abc' is not an id"),
    "PUDEV_GID=1e3": (["--user", "0", "--env", "PUDEV_GID=1e3"], "pudev-entrypoint: PUDEV_GID='1e3' is not an id"),
    "PUDEV_UID not as root": (["--env", "PUDEV_UID=1234"], "pudev-entrypoint: PUDEV_UID/PUDEV_GID need the container"),
    "PUDEV_USER=bob": (["--env", "PUDEV_USER=bob"], "pudev-entrypoint: PUDEV_USER='bob' names no user"),
    "PUDEV_SKIP_START_HOOKS=yes": (["--env", "PUDEV_SKIP_START_HOOKS=yes"],
                                   "pudev-entrypoint: PUDEV_SKIP_START_HOOKS='yes' is not usable"),
    "JUPYTER_PORT=notaport": (["--env", "JUPYTER_PORT=notaport"], "start-jupyter: JUPYTER_PORT='notaport' is not"),
    "JUPYTER_PORT=0": (["--env", "JUPYTER_PORT=0"], "start-jupyter: JUPYTER_PORT='0' is not usable"),
    "JUPYTER_BASE_URL=nb": (["--env", "JUPYTER_BASE_URL=nb"], "start-jupyter: JUPYTER_BASE_URL='nb' is not usable"),
    "JUPYTER_ROOT_DIR=/nope": (["--env", "JUPYTER_ROOT_DIR=/nope"], "start-jupyter: JUPYTER_ROOT_DIR='/nope' is"),
    "PUDEV_JUPYTER_NO_AUTH=yes": (["--env", "PUDEV_JUPYTER_NO_AUTH=yes"],
                                  "start-jupyter: PUDEV_JUPYTER_NO_AUTH='yes' is not usable"),
    # The old Kubernetes advice as docker flags: the cache and /tmp writable, the rest of the home not.
    "read-only root without the home mount": (
        ["--read-only", "--tmpfs", "/tmp", "--tmpfs", "/home/dev/.cache:exec,uid=1000,gid=1000"],
        "start-jupyter: JupyterLab needs /home/dev/.local/share/jupyter/runtime, but /home/dev"),
    "JUPYTER_PORT, jupyter lab without the entrypoint": (
        [*NO_ENTRYPOINT, "--env", "JUPYTER_PORT=notaport"], "jupyter: JUPYTER_PORT='notaport' is not usable"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_a_bad_input_is_one_line_and_a_quick_exit(newest_image: LocalImage, case: str) -> None:
    options, expected = BAD_INPUTS[case]
    command = ["jupyter", "lab"] if NO_ENTRYPOINT[0] in options else []
    started = time.monotonic()
    result = _run(newest_image, options, command, timeout=120)
    elapsed = time.monotonic() - started
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert result.returncode == 2, (result.returncode, lines[-20:])
    assert len(lines) == 1 and lines[0].startswith(expected), lines[-20:]
    assert elapsed < (30 if command else 15), f"{elapsed:.1f} s"


READ_ONLY_MANIFEST = REPO_ROOT / "examples" / "kubernetes" / "jupyterlab-readonly.yaml"


def kubernetes_flags(manifest: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The docker options and command a Pod's security settings and volumes stand for: its uid and group,
    a read-only root, no capabilities or escalation, and each emptyDir as an exec tmpfs the pod's uid can
    write (/dev/shm is Docker's own). The claim at /workspace becomes one too."""
    spec = manifest["spec"]
    (container,) = spec["containers"]
    pod, own = spec["securityContext"], container["securityContext"]
    options = ["--user", f"{pod['runAsUser']}:{pod['runAsGroup']}", "--group-add", str(pod["fsGroup"]),
               *NO_ENTRYPOINT]  # `command:` replaces the entrypoint
    assert own["readOnlyRootFilesystem"] is True and own["capabilities"]["drop"] == ["ALL"]
    options += ["--read-only", "--cap-drop", "ALL"]
    if own.get("allowPrivilegeEscalation") is False:
        options += ["--security-opt", "no-new-privileges"]
    kinds = {volume["name"]: volume for volume in spec["volumes"]}
    for mount in container["volumeMounts"]:
        volume, path = kinds[mount["name"]], mount["mountPath"]
        if path == "/dev/shm":
            continue
        assert "emptyDir" in volume or "persistentVolumeClaim" in volume, volume
        # exec, as an emptyDir; owned by the pod's uid, since runc gives a tmpfs on a folder the image has that
        # folder's mode (/home/dev: 2775) and ignores mode=, where kubelet's emptyDir is world-writable
        options += ["--tmpfs", f"{path}:exec,uid={pod['runAsUser']},gid={pod['runAsGroup']}"]
    return options, list(container["command"])


def test_jupyterlab_answers_with_the_kubernetes_read_only_mounts(newest_image: LocalImage) -> None:
    """examples/kubernetes/jupyterlab-readonly.yaml's uid (4242), read-only root and emptyDir volumes, as
    docker flags: JupyterLab answers, and a kernel's HOME is the mounted home. About 4 s."""
    from ruamel.yaml import YAML

    pod = next(doc for doc in YAML(typ="safe").load_all(READ_ONLY_MANIFEST.read_text()) if doc["kind"] == "Pod")
    options, command = kubernetes_flags(pod)
    assert options[:2] == ["--user", "4242:4242"] and "/home/dev:exec,uid=4242,gid=4242" in options, options
    with _jupyterlab(newest_image, "anyuser-k8s-readonly", options, command) as (_, server):
        status, kernel = server.request("POST", "api/kernels", {"name": "python3"})
        assert status == 201
        seen = server.run_code(kernel["id"], "import os; print(os.getuid(), os.environ['HOME'])").strip()
        assert seen.splitlines()[-1:] == ["4242 /home/dev"], seen


EXTENSION = ("from torch.utils.cpp_extension import load_inline; "
             "load_inline('tiny', cpp_sources='int add(int a, int b) { return a + b; }', functions=['add'])")


@pytest.mark.allow_log(r"Traceback \(most recent call last\)", r"OSError: \[Errno 30\] Read-only file system")
def test_an_extension_build_without_the_home_mount_names_it_first(newest_image: LocalImage) -> None:
    """A read-only root with only /tmp: one line naming the mount, before torch's traceback. About 2 s."""
    result = _run(newest_image, ["--read-only", "--tmpfs", "/tmp"], ["python", "-c", EXTENSION], timeout=300)
    lines = result.stderr.splitlines()
    said = [index for index, line in enumerate(lines) if line.startswith("pudev: torch builds extensions in ")]
    traceback = [index for index, line in enumerate(lines) if line.startswith("Traceback")]
    assert result.returncode != 0 and len(said) == 1 and traceback and said[0] < traceback[0], lines[-20:]
    assert "/home/dev/.cache/torch_extensions, but /home/dev" in lines[said[0]], lines[said[0]]
    assert lines[said[0]].endswith("is read-only: add --tmpfs /home/dev:exec,uid=1000,gid=1000 "
                                   "(Kubernetes: an emptyDir at /home/dev)"), lines[said[0]]
    assert "Read-only file system" in lines[-1], lines[-3:]


def test_an_arbitrary_uid_on_a_noexec_home_is_told_before_the_build(newest_image: LocalImage) -> None:
    """uid 4242 on a read-only root with only /tmp: HOME falls back to /tmp/home-4242, noexec; the build's
    first import says so (the issue's `failed to map segment` otherwise comes after a full compile). About 5 s."""
    result = _run(newest_image, ["--read-only", "--tmpfs", "/tmp", "--user", "4242:4242"],
                  ["python", "-c", "import torch.utils.cpp_extension"], timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.splitlines()[:1] == [  # first, before torch's own "No CUDA runtime is found" line
        "pudev: torch builds extensions in /tmp/home-4242/.cache/torch_extensions, but /tmp/home-4242 is on a "
        "noexec mount, so a library built there cannot load: add --tmpfs /home/dev:exec,uid=4242,gid=4242 "
        "(Kubernetes: an emptyDir at /home/dev)"], result.stderr[-2000:]


def test_pudev_uid_0_is_warned_about_and_runs_as_root(newest_image: LocalImage) -> None:
    """`-e PUDEV_UID="$(id -u)"` from a host logged in as root: one line, the command as root, dev untouched."""
    result = _run(newest_image, ["--user", "0", "--env", "PUDEV_UID=0", "--env", "PUDEV_GID=0"],
                  ["sh", "-c", "id -u; id -u dev; stat -c %u /home/dev"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "1000", "1000"]
    assert result.stderr.splitlines()[:1] == [  # first, before torch's own "No CUDA runtime is found" line
        "pudev-entrypoint: PUDEV_UID=0 is root: the command runs as root and dev keeps its ids (for files owned by "
        "your host user, start as that user, not root)"]
