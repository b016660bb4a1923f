"""The Docker CLI, found once and called through one place.

pudev drives the engine through the `docker` command (not the SDK) because
BuildKit builds, secrets and cache mounts need the CLI. Which client to use is
configurable: PUDEV_DOCKER (or `make DOCKER=...`); otherwise the first client on
PATH that can run BuildKit builds is chosen.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pudev.common.errors import PudevError
from pudev.common.versions import release

START_HINT = (
    "start one with `sudo systemctl start docker` (or `sudo dockerd &`), "
    "or point DOCKER_HOST at a running engine"
)


# One `docker version` answers both what the client is and whether an engine answers (each call costs
# the client's start, about 50 ms, on every build). The server part is empty when no engine answers; its
# components tell Docker's engine ("Engine") from another behind the same API (podman's "Podman Engine").
VERSIONS_FORMAT = ("{{.Client.Version}}|{{if .Server}}{{.Server.Version}}|"
                   "{{range .Server.Components}}{{.Name}},{{end}}{{end}}")
# The oldest Docker engine pudev builds on: the oldest release the e2e suite runs on (docs/maintaining/tests.md).
ENGINE_FLOOR = "28.0"
UPGRADE_HINT = ("upgrade it to Docker 28 or newer: Docker's own packages (docs.docker.com/engine/install; in China "
                "through a mirror's docker-ce repository), or Debian sid's docker.io")


@dataclass(frozen=True)
class Versions:
    client: str
    server: str
    error: str  # the client's last line when no engine answered
    components: tuple[str, ...] = ()

    def engine_below_floor(self) -> bool:
        """Docker's own engine older than ENGINE_FLOOR (another engine's numbers are not Docker's)."""
        # Distributions append their own marks: Debian's "28.5.2+dfsg4", Ubuntu's "24.0.7-0ubuntu2".
        numbers = re.match(r"(\d+)\.(\d+)", self.server)
        if "Engine" not in self.components or numbers is None:
            return False
        return release(f"{numbers[1]}.{numbers[2]}") < release(ENGINE_FLOOR)


class _VersionProbe:
    """The client's version, asked once per client and command. The engine's answer is used at most
    once more: by the next require_daemon(), which otherwise asks again (a later check must see an
    engine that has gone away since)."""

    def __init__(self) -> None:
        self.clients: dict[str, str] = {}
        self.unused: dict[str, Versions] = {}

    def ask(self, cli: str) -> Versions:
        try:
            result = subprocess.run([cli, "version", "--format", VERSIONS_FORMAT], check=False, capture_output=True,
                                    text=True, timeout=20, env=docker_env())
            client, _, rest = result.stdout.strip().partition("|")
            server, _, components = rest.partition("|")
            answer = Versions(client.strip(), server.strip(), last_line(result.stderr),
                              tuple(name for name in components.split(",") if name))
        except (OSError, subprocess.TimeoutExpired) as error:
            answer = Versions("", "", str(error))
        self.clients[cli], self.unused[cli] = answer.client, answer
        return answer

    def client(self, cli: str) -> str:
        return self.clients[cli] if cli in self.clients else self.ask(cli).client

    def server_now(self, cli: str) -> Versions:
        """The engine's answer from a probe this command has not used yet, else a new one."""
        answer = self.unused.pop(cli, None)
        if answer is None:
            answer = self.ask(cli)
            del self.unused[cli]  # used now
        return answer

    def clear(self) -> None:
        self.clients.clear()
        self.unused.clear()


versions = _VersionProbe()


def _client_major(cli: str) -> int | None:
    try:
        return int(versions.client(cli).split(".")[0])
    except ValueError:
        return None


@functools.cache  # probed once per client and command, however many steps ask
def _can_buildkit(cli: str) -> bool:
    """Docker 23+ clients build with BuildKit only through the buildx plugin;
    older clients (20.10) build with BuildKit themselves when DOCKER_BUILDKIT=1."""
    major = _client_major(cli)
    if major is None:
        return False
    if major < 23:
        return True
    probe = subprocess.run([cli, "buildx", "version"], check=False, capture_output=True, text=True, timeout=20)
    return probe.returncode == 0


def _candidates() -> list[str]:
    found = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(directory, "docker")
        # os.path.isfile, not Path.is_file: a PATH folder this user may not read is no candidate, not a crash.
        if os.path.isfile(path) and os.access(path, os.X_OK) and path not in found:
            found.append(path)
    return found


BUILDX_HINT = ("Docker 23 and newer build with BuildKit only through the buildx plugin: install it "
               "(Debian: docker-buildx) or point PUDEV_DOCKER at a client that has it")


@functools.cache
def docker_cli() -> str:
    configured = os.environ.get("PUDEV_DOCKER", "").strip()
    if configured:
        resolved = shutil.which(configured)
        if resolved is None:
            raise PudevError(f"PUDEV_DOCKER={configured} is not an executable docker client; fix the path")
        return resolved
    candidates = _candidates()
    if not candidates:
        raise PudevError("no `docker` command found: install the Docker CLI or set PUDEV_DOCKER=/path/to/docker")
    for cli in candidates:
        if _can_buildkit(cli):
            return cli
    raise PudevError(
        f"no docker client on PATH can run BuildKit builds ({', '.join(candidates)}): {BUILDX_HINT}"
    )


def require_buildkit() -> str:
    """The client, checked to run BuildKit builds (before a build fails with only a URL as its reason)."""
    cli = docker_cli()
    if not _can_buildkit(cli):
        source = "PUDEV_DOCKER" if os.environ.get("PUDEV_DOCKER", "").strip() else "PATH"
        raise PudevError(f"{cli} (from {source}) cannot run BuildKit builds: {BUILDX_HINT}")
    return cli


def docker_env() -> dict[str, str]:
    # buildx (Docker 23+) attaches a provenance attestation to every build by default, and its timestamps
    # give even a fully cached build a new image id on the containerd image store: the id pudev's proof
    # keys on (a local pass, the tested digest). The image's record label already says what went in.
    return {**os.environ, "DOCKER_BUILDKIT": "1", "BUILDX_NO_DEFAULT_ATTESTATIONS": "1"}


def run(args: Sequence[str], *, check: bool = True, timeout: float | None = 300) -> subprocess.CompletedProcess[str]:
    """Run `docker ARGS`, capturing output. A failure becomes a one-line PudevError."""
    command = [docker_cli(), *args]
    try:
        result = subprocess.run(command, check=False, capture_output=True, text=True, env=docker_env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise PudevError(f"`docker {' '.join(args[:2])}` did not answer within {timeout:.0f} s") from None
    if check and result.returncode != 0:
        raise PudevError(f"`docker {' '.join(args[:3])}` failed: {last_line(result.stderr)}")
    return result


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def engine_answer() -> Versions:
    """What `docker version` says of the engine, its server part empty where none answers: for checks that
    report rather than stop (`pudev pick`). No client at all still raises PudevError."""
    return versions.server_now(docker_cli())


def require_daemon() -> None:
    """Fail with the fix when no engine answers."""
    answer = versions.server_now(docker_cli())
    if not answer.server:
        raise PudevError(f"cannot reach the Docker daemon ({answer.error or 'no answer'}): {START_HINT}")
    if answer.engine_below_floor():
        where = "that DOCKER_HOST names" if os.environ.get("DOCKER_HOST") else "on this host"
        raise PudevError(f"the Docker engine {where} is {answer.server}, older than {ENGINE_FLOOR}, the oldest pudev "
                         f"supports: {UPGRADE_HINT}")


def inspect_image(ref: str) -> dict[str, Any] | None:
    result = run(["image", "inspect", ref], check=False)
    if result.returncode != 0:
        return None
    data: list[dict[str, Any]] = json.loads(result.stdout)
    return data[0]


def inspect_images(refs: Sequence[str]) -> dict[str, dict[str, Any] | None]:
    """Each image's inspect output (None where the engine lacks it): one call where it has them all
    (each call costs the client's start, about 70 ms), else one per image, since the engine's answer
    then leaves the missing ones out and no longer lines up with `refs`."""
    result = run(["image", "inspect", *refs], check=False) if refs else None
    if result is not None and result.returncode == 0:
        found: list[dict[str, Any]] = json.loads(result.stdout)
        if len(found) == len(refs):
            return dict(zip(refs, found, strict=True))
    return {ref: inspect_image(ref) for ref in refs}


def image_id(ref: str) -> str | None:
    info = inspect_image(ref)
    return str(info["Id"]) if info else None


def has_gpu_runtime() -> bool:
    """True when containers can get GPUs: an nvidia runtime or the container toolkit's hook."""
    result = run(["info", "--format", "{{json .Runtimes}}"], check=False)
    if result.returncode == 0 and "nvidia" in result.stdout:
        return True
    return any(shutil.which(tool) for tool in ("nvidia-container-runtime-hook", "nvidia-container-cli"))


PULL_HINT = ("behind a Docker Hub block, add --pull-mirror PREFIX (a registry mirror or pull-through proxy), "
             "or --base-image / --toolkit-image")


def ensure_local(image: str, *, hint: str = PULL_HINT, platform: str = "",
                 present: dict[str, Any] | None = None) -> dict[str, Any]:
    """Pull `image` unless the engine already has it (output streams to the terminal); returns its
    `docker image inspect`, so the caller need not ask again. With a `platform`, an image of another
    platform under that name does not count (the engine keeps one platform per name). `present`: the
    image's inspect where the caller already has it (inspect_images)."""
    info = present if present is not None else inspect_image(image)
    if info is not None and platform_of(info) in ("", platform or platform_of(info)):
        return info
    pull = [docker_cli(), "pull", *(["--platform", platform] if platform else []), image]
    result = subprocess.run(pull, env=docker_env(), check=False)
    info = inspect_image(image) if result.returncode == 0 else None
    if info is None:
        raise PudevError(f"cannot pull {image}: {hint}")
    return info


def platform_of(info: dict[str, Any]) -> str:
    """linux/arm64 for an image inspect's Os and Architecture ('' when it names none)."""
    architecture = info.get("Architecture")
    return f"{info.get('Os') or 'linux'}/{architecture}" if architecture else ""


def drop_if_untagged(image_id: str, *, background: bool = False) -> None:
    """Remove an image a rebuild replaced, unless something still names it (it holds GBs). In the
    `background`, the caller need not wait: the engine takes seconds to delete a replaced image's
    files (3.5 s for the 5 GB a cold rebuild replaces, 2026-12-04), time a user waited for nothing.
    The removal outlives pudev, in a session of its own, so an interrupt at the terminal never
    reaches it; like `docker rmi`, it leaves an image a container still uses."""
    if not background:
        info = inspect_image(image_id)
        if info is not None and not info.get("RepoTags"):
            run(["rmi", image_id], check=False)
        return
    # sh asks whether anything names the image, in the background too (a client start the caller
    # need not wait for), removes it if not, and exits at once, so nothing is left for pudev to reap.
    script = '{ [ "$("$1" image inspect --format "$3" "$2")" = 0 ] && "$1" rmi "$2"; } >/dev/null 2>&1 &'
    subprocess.run(["sh", "-c", script, "sh", docker_cli(), image_id, "{{len .RepoTags}}"],
                   env=docker_env(), stdin=subprocess.DEVNULL, start_new_session=True, check=False, timeout=60)
