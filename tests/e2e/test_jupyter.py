"""JupyterLab on port 8888: health, token auth, a notebook cell run through the
kernel API, and the port, base URL, token and no-auth overrides."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterator

import pytest
from e2e_support import QUICK_HEALTH, LocalImage, profile_variant
from jupyter_client_lite import JupyterServer, free_port, notebook

from pudev.engine.containers import TrackedContainer

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
def default_server(local_image: LocalImage) -> Iterator[tuple[TrackedContainer, JupyterServer]]:
    token = secrets.token_hex(16)
    container, port = _start(local_image, env={"JUPYTER_TOKEN": token})
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


def test_notebook_cell_runs_torch(default_server: tuple[TrackedContainer, JupyterServer], local_image: LocalImage
                                  ) -> None:
    _, server = default_server
    code = "import torch; print(torch.version.cuda)"
    status, _ = server.request("PUT", "api/contents/probe.ipynb", notebook(code))
    assert status in (200, 201)
    status, session = server.request("POST", "api/sessions", {
        "path": "probe.ipynb", "type": "notebook", "name": "probe.ipynb", "kernel": {"name": "python3"}})
    assert status == 201, session
    assert server.run_code(session["kernel"]["id"], code).strip() == profile_variant("local").cuda
    status, saved = server.request("GET", "api/contents/probe.ipynb")
    assert status == 200 and saved["content"]["cells"][0]["source"] == code


def test_server_runs_as_the_default_user_in_workspace(default_server: tuple[TrackedContainer, JupyterServer]
                                                      ) -> None:
    container, _ = default_server
    processes = container.exec(["ps", "-o", "user=,args=", "-C", "jupyter-lab"]).stdout
    assert processes.startswith("dev "), processes
    assert container.exec(["sh", "-c", "ls /proc/1/cwd -l"]).returncode == 0


def test_port_base_url_and_token_overrides(local_image: LocalImage) -> None:
    container, port = _start(local_image, container_port=9999, env={
        "JUPYTER_PORT": "9999", "JUPYTER_BASE_URL": "/nb/", "JUPYTER_TOKEN": "override-token"})
    with container:
        # The healthcheck reads the runtime file, so it follows the overrides without being told.
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy", container.logs()[-3000:]
        server = JupyterServer(port=port, token="override-token", base_url="/nb/")
        assert server.request("GET", "api/status")[0] == 200
        assert server.request("GET", "api/status", token="")[0] == 403


def test_generated_token_is_printed_with_the_url(local_image: LocalImage) -> None:
    container, port = _start(local_image)
    with container:
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy"
        match = re.search(r"http://127\.0\.0\.1:8888/lab\?token=([0-9a-f]{32,})", container.logs())
        assert match, container.logs()[-3000:]
        server = JupyterServer(port=port, token=match.group(1))
        assert server.request("GET", "api/status")[0] == 200
        assert server.request("GET", "api/status", token="")[0] == 403


@pytest.mark.allow_log(r"WARNING: authentication is OFF")  # the warning this opt-in must print
def test_disabling_auth_is_an_explicit_opt_in(local_image: LocalImage) -> None:
    container, port = _start(local_image, env={"PUDEV_JUPYTER_NO_AUTH": "1"})
    with container:
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy"
        assert JupyterServer(port=port).request("GET", "api/status", token="")[0] == 200
        assert "authentication is OFF" in container.logs()


def test_docker_stop_ends_within_the_grace_period(local_image: LocalImage) -> None:
    container, _ = _start(local_image, env={"JUPYTER_TOKEN": "t"})
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


def test_hardened_run_serves_and_runs_a_kernel(local_image: LocalImage) -> None:
    port = free_port()
    options = [*_hardened_options(), *QUICK_HEALTH, "--tmpfs", "/workspace:uid=1000,gid=1000",
               "--publish", f"127.0.0.1:{port}:8888", "--env", "JUPYTER_TOKEN=hardened"]
    container = TrackedContainer(local_image.tag, purpose="hardened", options=options)
    container.start()
    with container:
        assert container.wait_for(HEALTH, "healthy", timeout=180) == "healthy", container.logs()[-3000:]
        server = JupyterServer(port=port, token="hardened")
        assert server.request("GET", "api/status")[0] == 200
        status, kernel = server.request("POST", "api/kernels", {"name": "python3"})
        assert status == 201
        assert server.run_code(kernel["id"], "import torch; print(torch.__version__)").strip().startswith("2.")
        assert container.exec(["touch", "/opt/pudev/x"]).returncode != 0  # the root filesystem is read-only
