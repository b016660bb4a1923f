"""JupyterLab on port 8888: health, token auth, a notebook cell run through the
kernel API, the port, base URL, token and no-auth overrides, and `pudev jupyter`
(the quick start's `docker run`) started by an ordinary user of the docker group."""

from __future__ import annotations

import grp
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import PUDEV, QUICK_HEALTH, LocalImage, profile_variant
from jupyter_client_lite import JupyterServer, free_port, notebook
from shards import newest_profile

from pudev.engine import docker
from pudev.engine.containers import TrackedContainer
from pudev.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.slow]
HEALTH = "{{.State.Health.Status}}"


def _start(image: LocalImage, *, container_port: int = 8888, env: dict[str, str] | None = None
           ) -> tuple[TrackedContainer, int]:
    port = free_port()
    options = [*QUICK_HEALTH, "--publish", f"127.0.0.1:{port}:{container_port}"]
    for key, value in (env or {}).items():
        options += ["--env", f"{key}={value}"]
    container = TrackedContainer(image.tag, purpose="jupyter", options=options)
    container.start()
    return container, port


@pytest.fixture(scope="module")
def default_server(newest_image: LocalImage) -> Iterator[tuple[TrackedContainer, JupyterServer]]:
    token = secrets.token_hex(16)
    container, port = _start(newest_image, env={"JUPYTER_TOKEN": token})
    with container:
        status = container.wait_for(HEALTH, "healthy", timeout=180)
        assert status == "healthy", container.logs()[-3000:]
        yield container, JupyterServer(port=port, token=token)


def test_status_needs_the_token(default_server: tuple[TrackedContainer, JupyterServer]) -> None:
    _, server = default_server
    status, body = server.request("GET", "api/status")
    assert status == 200 and "started" in body
    assert server.request("GET", "api/status", token="")[0] == 403
    assert server.request("GET", "api/status", token="wrong")[0] == 403


def test_notebook_cell_runs_torch(default_server: tuple[TrackedContainer, JupyterServer], newest_image: LocalImage
                                  ) -> None:
    _, server = default_server
    code = "import torch; print(torch.version.cuda)"
    status, _ = server.request("PUT", "api/contents/probe.ipynb", notebook(code))
    assert status in (200, 201)
    status, session = server.request("POST", "api/sessions", {
        "path": "probe.ipynb", "type": "notebook", "name": "probe.ipynb", "kernel": {"name": "python3"}})
    assert status == 201, session
    assert server.run_code(session["kernel"]["id"], code).strip() == profile_variant(newest_profile()).cuda
    status, saved = server.request("GET", "api/contents/probe.ipynb")
    assert status == 200 and saved["content"]["cells"][0]["source"] == code


def test_jupyter_news_and_update_checks_are_off_until_turned_on(
        default_server: tuple[TrackedContainer, JupyterServer]) -> None:
    """JupyterLab would ask on first open whether to fetch Jupyter's news feed, a request that hangs where it is
    blocked; the image's defaults (/etc/jupyter/labconfig) answer no, and Settings > Notifications turns it on."""
    _, server = default_server
    status, body = server.request("GET", "lab/api/settings/@jupyterlab/apputils-extension:notification")
    assert status == 200, body
    # The overrides become the schema's defaults; a user's own choice (body["settings"]) would win over them.
    defaults = {name: field.get("default") for name, field in body["schema"]["properties"].items()}
    assert (defaults["fetchNews"], defaults["checkForUpdates"]) == ("false", False), defaults


def test_server_runs_as_the_default_user_in_workspace(default_server: tuple[TrackedContainer, JupyterServer]
                                                      ) -> None:
    container, _ = default_server
    processes = container.exec(["ps", "-o", "user=,args=", "-C", "jupyter-lab"]).stdout
    assert processes.startswith("dev "), processes
    assert container.exec(["sh", "-c", "ls /proc/1/cwd -l"]).returncode == 0


def test_port_base_url_and_token_overrides(newest_image: LocalImage) -> None:
    container, port = _start(newest_image, container_port=9999, env={
        "JUPYTER_PORT": "9999", "JUPYTER_BASE_URL": "/nb/", "JUPYTER_TOKEN": "override-token"})
    with container:
        # The healthcheck reads the runtime file, so it follows the overrides without being told.
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy", container.logs()[-3000:]
        server = JupyterServer(port=port, token="override-token", base_url="/nb/")
        assert server.request("GET", "api/status")[0] == 200
        assert server.request("GET", "api/status", token="")[0] == 403


def test_generated_token_is_printed_with_the_url(newest_image: LocalImage) -> None:
    container, port = _start(newest_image)
    with container:
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy"
        match = re.search(r"http://127\.0\.0\.1:8888/lab\?token=([0-9a-f]{32,})", container.logs())
        assert match, container.logs()[-3000:]
        server = JupyterServer(port=port, token=match.group(1))
        assert server.request("GET", "api/status")[0] == 200
        assert server.request("GET", "api/status", token="")[0] == 403


@pytest.mark.allow_log(r"WARNING: authentication is OFF")  # the warning this opt-in must print
def test_disabling_auth_is_an_explicit_opt_in(newest_image: LocalImage) -> None:
    container, port = _start(newest_image, env={"PUDEV_JUPYTER_NO_AUTH": "1"})
    with container:
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy"
        assert JupyterServer(port=port).request("GET", "api/status", token="")[0] == 200
        assert "authentication is OFF" in container.logs()


def test_docker_stop_ends_within_the_grace_period(newest_image: LocalImage) -> None:
    container, _ = _start(newest_image, env={"JUPYTER_TOKEN": "t"})
    with container:
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy"
        started = time.monotonic()
        from pudev.engine import docker

        docker.run(["stop", "--time", "20", container.name], timeout=60)
        elapsed = time.monotonic() - started
    assert elapsed < 10, f"docker stop took {elapsed:.1f} s: SIGTERM did not reach JupyterLab"


def _hardened_options() -> list[str]:
    """The hardened `docker run` options exactly as the docs show them (ports and mounts aside)."""
    import shlex

    from pudev.paths import REPO_ROOT

    page = (REPO_ROOT / "docs" / "using" / "jupyterlab.md").read_text()
    block = page.split("<!-- hardened-run:start -->")[1].split("<!-- hardened-run:end -->")[0]
    command = block.split("```sh")[1].split("```")[0].replace("\\\n", " ")
    words = shlex.split(command)
    assert words[:2] == ["docker", "run"]
    options, skip = [], False
    for word in words[2:-1]:  # the last word is the image
        if skip:
            skip = False
        elif word in ("-p", "-v"):
            skip = True
        else:
            options.append(word)
    assert {"--read-only", "ALL", "no-new-privileges"} <= set(options)
    return options


HARDENED_USERS = {"image user": "1000:1000", "4242:4242": "4242:4242", "4242:0": "4242:0"}


def _as_user(options: list[str], user: str) -> list[str]:
    """The page's other-user variant: `--user U:G`, and the home tmpfs given to U:G in place of 1000:1000."""
    uid, gid = user.split(":")
    home = [option.replace("uid=1000,gid=1000", f"uid={uid},gid={gid}") if option.startswith("/home/dev:") else option
            for option in options]
    assert home != options or user == "1000:1000", options  # the page's home mount names the image user's ids
    return home if user == "1000:1000" else [*home, "--user", user]


@pytest.mark.parametrize("user", HARDENED_USERS)
def test_hardened_run_serves_and_runs_a_kernel(newest_image: LocalImage, user: str) -> None:
    """The documented hardened run, as the image user and as an arbitrary uid (the `--user` variants the page
    shows): JupyterLab answers, a kernel starts, and a C++ extension compiles, imports and is cached, so a new
    kernel loads it without building again. 24-28 s each on a 2-core runner (measured), most of it the first build."""
    port = free_port()
    uid, gid = HARDENED_USERS[user].split(":")
    options = [*_as_user(_hardened_options(), HARDENED_USERS[user]), *QUICK_HEALTH,
               "--tmpfs", f"/workspace:uid={uid},gid={gid}",
               "--publish", f"127.0.0.1:{port}:8888", "--env", "JUPYTER_TOKEN=hardened"]
    container = TrackedContainer(newest_image.tag, purpose="hardened", options=options)
    container.start()
    with container:
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy", container.logs()[-3000:]
        server = JupyterServer(port=port, token="hardened")
        assert server.request("GET", "api/status")[0] == 200
        status, kernel = server.request("POST", "api/kernels", {"name": "python3"})
        assert status == 201
        assert server.run_code(kernel["id"], "import torch; print(torch.__version__)").strip().startswith("2.")
        assert container.exec(["touch", "/opt/pudev/x"]).returncode != 0  # the root filesystem is read-only
        # Every uid's HOME is the one exec tmpfs, so a notebook builds and loads a C++ extension there.
        built = server.run_code(kernel["id"], TINY_EXTENSION, timeout=300)
        assert built.strip().splitlines()[-1:] == ["5"], built  # after torch's own "No CUDA runtime is found" line
        assert "pudev:" not in built, built  # no missing mount, and the compiler cache is on (under the home)
        # Cached: a new kernel loads the built module without building it again (the .so is not rewritten).
        status, second = server.request("POST", "api/kernels", {"name": "python3"})
        assert status == 201
        again = server.run_code(second["id"], CACHED_EXTENSION, timeout=300).strip().splitlines()[-1:]
        assert again[:1] and again[0].startswith("home=/home/dev built=1 same=True "), again
        assert float(again[0].split("seconds=")[1].split()[0]) < 30, again
        assert again[0].endswith(" add=5"), again
        assert container.exec(["test", "-d", "/home/dev/.cache/ccache"]).returncode == 0  # ccache's fallback
        if user != "image user":
            return
        # `pudev verify` names what a read-only folder or a noexec tmpfs (here /tmp, Docker's default) would break.
        for folder, says in (("", "ok  "), ("/tmp/ext", "is on a noexec mount"), ("/opt/ext", "is not writable")):
            env = {"TORCH_EXTENSIONS_DIR": folder} if folder else {}
            verify = container.exec(["pudev", "verify", "--cpu"], env=env).stdout
            row = next((line for line in verify.splitlines() if line.startswith("extension builds")), verify)
            assert says in row and (folder or "/home/dev/.cache/torch_extensions") in row, row


TINY_SOURCE = "int add(int a, int b) { return a + b; }"
TINY_EXTENSION = f"""
from torch.utils.cpp_extension import load_inline
tiny = load_inline("tiny", cpp_sources="{TINY_SOURCE}", functions=["add"])
print(tiny.add(2, 3))
"""
CACHED_EXTENSION = f"""
import glob, os, time
from torch.utils.cpp_extension import load_inline
built = glob.glob(os.path.expanduser("~/.cache/torch_extensions/*/tiny/tiny*.so"))
before = [os.stat(path).st_mtime_ns for path in built]
started = time.monotonic()
tiny = load_inline("tiny", cpp_sources="{TINY_SOURCE}", functions=["add"])
seconds = time.monotonic() - started
same = [os.stat(path).st_mtime_ns for path in built] == before
print(f"home={{os.environ['HOME']}} built={{len(built)}} same={{same}} seconds={{seconds:.1f}} add={{tiny.add(2, 3)}}")
"""


HOST_USER = 4242  # a user of the docker group who is not uid 1000, the image's own
PRINTED_URL = re.compile(r"open (http://127\.0\.0\.1:(\d+)/lab\?token=(\S+))")


def _answers(server: JupyterServer) -> bool:
    try:
        return server.request("GET", "api/status")[0] == 200
    except OSError:  # nothing listens on the port yet
        return False


def _containers_of(image: str) -> list[str]:
    return docker.run(["ps", "-aq", "--filter", f"ancestor={image}"]).stdout.split()


def test_pudev_jupyter_runs_the_quick_start_as_the_host_user(newest_image: LocalImage, tmp_path: Path) -> None:
    """`pudev jupyter` (make jupyter) as uid 4242: the address it prints works, the kernel runs as 4242 with 8 GB
    of /dev/shm, a file saved in JupyterLab lands in the host folder owned by 4242, and Ctrl-C removes it all."""
    workspace = Path(tempfile.mkdtemp(prefix="pudev-jupyter-"))  # under /tmp, which that user may enter
    os.chown(workspace, HOST_USER, HOST_USER)
    before = set(_containers_of(newest_image.tag))
    home = Path(tempfile.mkdtemp(prefix="pudev-jupyter-home-"))  # the user's own: its docker client's config
    os.chown(home, HOST_USER, HOST_USER)
    process = subprocess.Popen(
        ["setpriv", f"--reuid={HOST_USER}", f"--regid={HOST_USER}", f"--groups={grp.getgrnam('docker').gr_gid}",
         "--", *PUDEV, "jupyter", "--image", newest_image.tag, "--port", str(free_port()),
         "--workspace", str(workspace)],
        cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "HOME": str(home)})
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        printed = PRINTED_URL.search(first)
        assert printed, first
        server = JupyterServer(port=int(printed.group(2)), token=printed.group(3))
        deadline = time.monotonic() + 180
        while not _answers(server):
            assert process.poll() is None and time.monotonic() < deadline, "JupyterLab never answered"
            time.sleep(1)
        status, session = server.request("POST", "api/sessions", {
            "path": "probe.ipynb", "type": "notebook", "name": "probe.ipynb", "kernel": {"name": "python3"}})
        assert status == 201, session
        code = "import os; s = os.statvfs('/dev/shm'); print(os.getuid(), s.f_blocks * s.f_frsize // 2**30)"
        assert server.run_code(session["kernel"]["id"], code).split() == [str(HOST_USER), "8"]
        assert server.request("PUT", "api/contents/saved.txt", {"type": "file", "format": "text",
                                                                "content": "hello"})[0] in (200, 201)
        saved = workspace / "saved.txt"
        assert saved.read_text() == "hello" and saved.stat().st_uid == HOST_USER
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: the client passes it on, and --rm removes the container
        process.wait(timeout=60)
    deadline = time.monotonic() + 30
    while set(_containers_of(newest_image.tag)) - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not set(_containers_of(newest_image.tag)) - before, "the container outlived Ctrl-C"
    shutil.rmtree(workspace)
    shutil.rmtree(home)
