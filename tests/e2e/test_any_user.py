"""Any user id and no entrypoint, from outside: the built stand-in image started the way
clusters start it. Kubernetes runAsUser N without a group (uid N, gid N), OpenShift's
random uid with gid 0, and pyxis/enroot or a Kubernetes `command:`, which bypass the
entrypoint (--entrypoint ""). Also: every input the entrypoint and JupyterLab's start
read, sent bad, gives one line and a non-zero exit at once."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from collections.abc import Sequence

import pytest
from e2e_support import QUICK_HEALTH, LocalImage, run_removed
from jupyter_client_lite import JupyterServer, free_port

from pudev.engine.containers import TrackedContainer

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
def test_the_any_user_part_of_the_suite_passes(local_image: LocalImage, run: str) -> None:
    """zsh, bash, python, pip, jupyter and cuda-switch; HOME, the mirror, ENV and /workspace
    (tests/image/test_any_user.py), as each of those users and without the entrypoint."""
    result = _run(local_image, SUITE_RUNS[run], ["pudev", "selftest", "--", "-q", "-m", "anyuser"], timeout=1200)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in summary and not any(word in summary for word in ("failed", "skipped", "error")), summary


@pytest.mark.parametrize("user", USERS)
def test_the_environment_is_the_same_without_the_entrypoint(local_image: LocalImage, user: str) -> None:
    """ENV, Python's and the shells' start-up files and the system-wide files give what the entrypoint
    would (the image ships no start hooks, the one thing only the entrypoint runs)."""
    # HOSTNAME differs per container; PWD is what the entrypoint's sh exports for the directory it was in.
    probe = ["python", "-c", "import json, os, subprocess; env = dict(os.environ); env.pop('HOSTNAME'); "
             "env.pop('PWD', None); "
             "pip = subprocess.run(['pip', 'config', 'list'], capture_output=True, text=True).stdout; "
             "print(json.dumps({'env': env, 'pip': pip}))"]
    with_entrypoint = json.loads(_run(local_image, USERS[user], probe).stdout)
    without = json.loads(_run(local_image, [*NO_ENTRYPOINT, *USERS[user]], probe).stdout)
    assert without == with_entrypoint
    env = without["env"]
    assert env["HOME"] != "/" and env["USER"] == "uid-4242"
    assert env["CUDA_HOME"].startswith("/usr/local/cuda-") and env["TORCH_CUDA_ARCH_LIST"]
    assert env["PIP_CONSTRAINT"] == env["UV_CONSTRAINT"] == "/etc/pudev/torch-constraints.txt"
    assert "/usr/local/cuda/bin" in env["PATH"].split(":")
    assert "global.index-url='https://mirrors.aliyun.com/pypi/simple/'" in without["pip"]


@pytest.mark.parametrize(("user", "expected_home"), [("4242:4242", "/tmp/home-4242"), ("4242:0", "/home/dev")])
def test_home_falls_back_and_workspace_follows_group_0(local_image: LocalImage, user: str, expected_home: str) -> None:
    script = 'echo "$HOME"; touch /workspace/made-here 2>/dev/null && stat -c %g /workspace/made-here || echo denied'
    lines = _run(local_image, USERS[user], ["sh", "-c", script]).stdout.split()
    assert lines == [expected_home, "0" if user.endswith(":0") else "denied"]


JUPYTER_RUNS = {"4242:4242": (USERS["4242:4242"], []), "4242:0": (USERS["4242:0"], []),
                "4242:0, no entrypoint": ([*NO_ENTRYPOINT, *USERS["4242:0"]], ["start-jupyter"])}


@pytest.mark.parametrize("run", JUPYTER_RUNS)
def test_jupyterlab_starts_for_any_user_and_wants_the_token(local_image: LocalImage, run: str) -> None:
    options, command = JUPYTER_RUNS[run]
    token, port = secrets.token_hex(16), free_port()
    container = TrackedContainer(local_image.tag, purpose="anyuser-jupyter", options=[
        *QUICK_HEALTH, "--publish", f"127.0.0.1:{port}:8888", "--env", f"JUPYTER_TOKEN={token}", *options])
    with container:
        container.start(command)
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy", container.logs()[-3000:]
        server = JupyterServer(port=port, token=token)
        assert server.request("GET", "api/status")[0] == 200
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
    "JUPYTER_PORT, jupyter lab without the entrypoint": (
        [*NO_ENTRYPOINT, "--env", "JUPYTER_PORT=notaport"], "jupyter: JUPYTER_PORT='notaport' is not usable"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_a_bad_input_is_one_line_and_a_quick_exit(local_image: LocalImage, case: str) -> None:
    options, expected = BAD_INPUTS[case]
    command = ["jupyter", "lab"] if NO_ENTRYPOINT[0] in options else []
    started = time.monotonic()
    result = _run(local_image, options, command, timeout=120)
    elapsed = time.monotonic() - started
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert result.returncode == 2, (result.returncode, lines[-20:])
    assert len(lines) == 1 and lines[0].startswith(expected), lines[-20:]
    assert elapsed < (30 if command else 15), f"{elapsed:.1f} s"
