"""What breaks a first `docker run --gpus all` on this host, each finding one line with its fix in the words
of the matching docs/troubleshooting.md entry: the engine and its version, the docker group, the NVIDIA
runtime or a CDI spec, and /dev/shm."""

from __future__ import annotations

import grp
import os
import pwd
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.engine import docker

# Where the NVIDIA Container Toolkit writes its CDI spec (`nvidia-ctk cdi generate`, or its refresh service).
CDI_DIRS = (Path("/etc/cdi"), Path("/var/run/cdi"))
# Below this, DataLoader workers that pass batches through a shared /dev/shm crash.
SHM_FLOOR = 1 << 30
GROUP_FIX = 'sudo usermod -aG docker "$USER", then newgrp docker (or log in again)'
RUNTIME_FIX = ("install nvidia-container-toolkit from NVIDIA's repository, then: sudo nvidia-ctk runtime configure "
               "--runtime=docker && sudo systemctl restart docker")


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok, WARN or FAIL
    message: str
    fix: str = ""

    @property
    def detail(self) -> str:
        return self.message + (f"; fix: {self.fix}" if self.fix else "")

    def line(self) -> str:
        return f"{self.check}  {self.status}  {self.detail}"


def engine_findings() -> tuple[list[Finding], bool]:
    """The client and the engine's answer; whether an engine answered."""
    try:
        answer = docker.engine_answer()
    except PudevError as error:
        return [Finding("docker", "FAIL", str(error))], False
    if not answer.server:
        said = answer.error or "no answer"
        if "permission denied" in said.lower():
            return [Finding("docker", "FAIL", f"permission denied while trying to connect to the Docker daemon "
                                              f"socket ({said})", GROUP_FIX)], False
        return [Finding("docker", "FAIL", f"cannot reach the Docker daemon ({said})", docker.START_HINT)], False
    if answer.engine_below_floor():
        return [Finding("docker", "FAIL", f"the Docker engine is {answer.server}, older than {docker.ENGINE_FLOOR}, "
                                          f"the oldest pudev supports",
                        docker.UPGRADE_HINT)], True
    return [Finding("docker", "ok", f"engine {answer.server}")], True


def group_finding(*, euid: int, user: str, session_groups: Sequence[int], docker_group: grp.struct_group | None,
                  engine_answered: bool) -> Finding:
    """Root, or a member of `docker` in this session, may use the daemon's socket."""
    if euid == 0:
        return Finding("docker group", "ok", "running as root")
    if docker_group is not None and docker_group.gr_gid in session_groups:
        return Finding("docker group", "ok", f"{user} is in the docker group")
    if engine_answered:
        return Finding("docker group", "ok", f"{user} is not in the docker group, but the engine answers (rootless "
                                             f"Docker, or DOCKER_HOST)")
    if docker_group is not None and user in docker_group.gr_mem:
        return Finding("docker group", "FAIL", f"{user} joined the docker group, but this session started before",
                       "newgrp docker (or log in again)")
    return Finding("docker group", "FAIL", f"{user} is neither root nor in the docker group: permission denied "
                                           f"while trying to connect to the Docker daemon socket", GROUP_FIX)


def _group() -> grp.struct_group | None:
    try:
        return grp.getgrnam("docker")
    except KeyError:
        return None


def _user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return f"uid {os.geteuid()}"


def cdi_specs(folders: Sequence[Path] = CDI_DIRS) -> list[Path]:
    found = []
    for folder in folders:
        try:
            found += sorted(path for path in folder.iterdir() if path.name.startswith("nvidia")
                            and path.suffix in (".yaml", ".yml", ".json"))
        except OSError:
            continue
    return found


def runtime_finding(*, has_runtime: bool, specs: Sequence[Path]) -> Finding:
    if has_runtime:
        return Finding("nvidia runtime", "ok", "the NVIDIA Container Toolkit serves --gpus")
    if specs:
        return Finding("nvidia runtime", "WARN", f"no NVIDIA runtime for --gpus, but a CDI spec ({specs[0]}): "
                                                 f"run with --device nvidia.com/gpu=all instead of --gpus all",
                       RUNTIME_FIX)
    return Finding("nvidia runtime", "FAIL", 'no NVIDIA runtime and no CDI spec: docker run --gpus all fails with '
                                             '`could not select device driver "" with capabilities: [[gpu]]`',
                   RUNTIME_FIX)


def _has_runtime() -> bool:
    try:
        return docker.has_gpu_runtime()
    except PudevError:  # no client: the toolkit's hook on PATH still says it is installed
        return False


def shm_finding(path: Path = Path("/dev/shm")) -> Finding:
    try:
        stat = os.statvfs(path)
    except OSError:
        return Finding("shared memory", "WARN", f"{path} cannot be read on this host",
                       "docker run --shm-size=8g ... (as the quick start does)")
    size = stat.f_blocks * stat.f_frsize
    if size < SHM_FLOOR:
        return Finding("shared memory", "WARN", f"{path} is {size >> 20} MiB on this host: DataLoader workers pass "
                                                f"batches through it and will crash in a container that shares it "
                                                f"(--ipc=host)",
                       "give the container its own: docker run --shm-size=8g ... (the quick start's), not --ipc=host")
    return Finding("shared memory", "ok", f"{path} is {size / (1 << 30):.0f} GiB; containers get their own with "
                                          f"--shm-size=8g (Docker's default is 64 MB, too small for DataLoader "
                                          f"workers)")


def findings(*, gpus: bool) -> list[Finding]:
    """Every check, in the order a first run meets them."""
    found, answered = engine_findings()
    found.append(group_finding(euid=os.geteuid(), user=_user(), session_groups=os.getgroups(), docker_group=_group(),
                               engine_answered=answered))
    if gpus:
        found.append(runtime_finding(has_runtime=_has_runtime(), specs=cdi_specs()))
    found.append(shm_finding())
    return found
