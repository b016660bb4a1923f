"""scripts/current-engine.sh for real: Debian sid's current Docker engine comes up beside the host's, with the
containerd image store and buildx, in a network namespace of its own whose bridge leaves the host engine's alone,
builds and runs there, runs a command in that namespace, and `remove` leaves nothing of it.

The engine a maintainer already keeps (running, or stopped with its data) is used and left as it was; only
an engine this test started is removed. What it stores here is one small stand-in, copied from the host's
engine (`docker save` piped to `docker load`), and two probes built on it."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import skip_or_fail
from secret_scan import files_in_save

from pudev.engine import docker
from pudev.engine.layers import read_layers
from pudev.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.slow]
SCRIPT = REPO_ROOT / "scripts/current-engine.sh"
NAME, IMAGE, STATE = "pudev-current-engine", "pudev-current-engine:sid", Path("/var/lib/pudev/current-engine")
SMALL = "pudev-standin/os:bookworm"


def _script(*words: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("DOCKER_HOST", "DOCKER_CONFIG")}
    return subprocess.run(["sh", str(SCRIPT), *words], capture_output=True, text=True, env=env, check=False,
                          timeout=900)


@pytest.fixture(scope="module")
def current_engine() -> Iterator[dict[str, str]]:
    """The environment that points a client at the current engine."""
    if os.geteuid() != 0:
        skip_or_fail("scripts/current-engine.sh needs root")
    if docker.inspect_image(SMALL) is None:
        skip_or_fail(f"{SMALL} is not built: make standins")
    found = "running" if docker.run(["inspect", "--format", "{{.State.Running}}", NAME], check=False,
                                    timeout=60).stdout.strip() == "true" else "kept" if STATE.exists() else "none"
    started = _script("up")
    try:
        assert started.returncode == 0, started.stderr[-2000:]
        variables = dict(re.findall(r"(DOCKER_HOST|DOCKER_CONFIG)=(\S+)", started.stdout))
        assert set(variables) == {"DOCKER_HOST", "DOCKER_CONFIG"}, started.stdout
        assert "remove it all: sh scripts/current-engine.sh remove" in started.stderr, started.stderr
        yield {**os.environ, **variables}
    finally:
        if found == "none":
            removed = _script("remove")
            assert removed.returncode == 0, removed.stderr
        elif found == "kept":
            _script("down")


def _on(env: dict[str, str], *args: str, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([docker.docker_cli(), *args], capture_output=True, text=True, env=env, stdin=stdin,
                          check=False, timeout=900)


def test_it_is_a_current_engine_with_the_containerd_store_and_buildx(current_engine: dict[str, str]) -> None:
    version = _on(current_engine, "version", "--format", "{{.Server.Version}}").stdout.strip()
    info = _on(current_engine, "info", "--format", "{{.Driver}} {{json .DriverStatus}}").stdout.strip()
    buildx = _on(current_engine, "buildx", "version")
    print(f"current engine: Docker {version}; storage: {info}; {buildx.stdout.strip()}")
    assert int(version.split(".")[0]) >= 28, version
    assert "io.containerd.snapshotter" in info, info
    assert buildx.returncode == 0, buildx.stderr
    host = docker.run(["version", "--format", "{{.Server.Version}}"], timeout=60).stdout.strip()
    assert host != version, "the host's engine answered where the current one should"


@pytest.fixture(scope="module")
def small_on_engine(current_engine: dict[str, str]) -> dict[str, str]:
    """The current engine's environment, with SMALL copied in from the host's engine."""
    if _on(current_engine, "image", "inspect", SMALL).returncode != 0:
        saved = subprocess.Popen([docker.docker_cli(), "save", SMALL], stdout=subprocess.PIPE)
        loaded = _on(current_engine, "load", stdin=saved.stdout.fileno() if saved.stdout else None)
        assert saved.wait(timeout=600) == 0 and loaded.returncode == 0, loaded.stderr
    return current_engine


def test_it_builds_and_runs_on_its_own_bridge(small_on_engine: dict[str, str], tmp_path: Path) -> None:
    current_engine = small_on_engine
    (tmp_path / "Dockerfile").write_text(f"FROM {SMALL}\nRUN echo built-by-buildkit > /etc/pudev-current-engine\n")
    tag = "pudev-current-engine-probe:latest"
    built = _on(current_engine, "build", "--tag", tag, str(tmp_path))
    assert built.returncode == 0, built.stderr[-2000:]
    ran = _on(current_engine, "run", "--rm", tag, "cat", "/etc/pudev-current-engine")
    assert ran.stdout == "built-by-buildkit\n", ran.stderr
    assert _on(current_engine, "rmi", tag).returncode == 0
    # The host engine's own bridge is still there: a container on it starts.
    assert docker.run(["run", "--rm", SMALL, "true"], check=False, timeout=120).returncode == 0


def test_run_puts_a_command_beside_the_engine(current_engine: dict[str, str]) -> None:
    """In the engine's network namespace (so the engine reaches what it serves on 127.0.0.1), with the client
    pointed at the engine."""
    pid = docker.run(["inspect", "--format", "{{.State.Pid}}", NAME], timeout=60).stdout.strip()
    inside = _script("run", "sh", "-c", 'readlink /proc/self/ns/net; docker version --format "{{.Server.Version}}"')
    assert inside.returncode == 0, inside.stderr
    namespace, version = inside.stdout.split()
    assert namespace == os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
    assert version == _on(current_engine, "version", "--format", "{{.Server.Version}}").stdout.strip()


def test_layers_and_secrets_read_through_the_save_on_the_containerd_store(
        small_on_engine: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This store's `docker save` holds a built layer gzipped (a loaded one as it was loaded), beside JSON blobs:
    pudev's layer listing and the suite's secret scan read them all the same (a raw byte search would find
    nothing in them)."""
    current_engine = small_on_engine
    needle = secrets.token_hex(16)
    (tmp_path / "Dockerfile").write_text(
        f"FROM {SMALL}\nRUN printf '%s' '{needle}' > /etc/leak && rm -r /usr/share/doc\n"
        f"LABEL org.pudev.test.leak={needle}\n")
    tag = "pudev-current-engine-leak:latest"
    built = _on(current_engine, "build", "--tag", tag, str(tmp_path))
    assert built.returncode == 0, built.stderr[-2000:]
    for name in ("DOCKER_HOST", "DOCKER_CONFIG"):
        monkeypatch.setenv(name, current_engine[name])
    try:
        listed = read_layers(tag)
        assert listed[-1].files.get("/etc/leak") == len(needle) and listed[-1].deleted == ["/usr/share/doc"], listed
        found = files_in_save(tag, needle.encode())
        assert [name.rsplit(":", 1)[1] for name in found if ":" in name] == ["etc/leak"], found
        assert [name for name in found if ":" not in name], f"the label's config was not read: {found}"
    finally:
        _on(current_engine, "rmi", tag)
