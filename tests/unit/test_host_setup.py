"""scripts/host-setup.sh's engine and disk steps, run against fake executables that record their calls: docker,
dockerd, containerd, apt-get, id, pkill, pgrep, setsid and df are stand-ins in a folder of the test's own, and
the few real tools the script also needs are the only others on its PATH, so no case reaches this machine's
engine, apt, processes or /etc/docker (PUDEV_DOCKER_CONFIG_DIR and PUDEV_ENGINE_LOG point into the folder)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "host-setup.sh"
# The real tools the script and the fakes use; nothing else of this machine's is on the script's PATH.
REAL_TOOLS = ("sed", "head", "mkdir", "rm", "mktemp", "cat", "ls", "tail", "grep", "awk", "sleep", "touch", "cp")
# What would change or read this machine if it were the real one: each is a fake here, or missing.
NEVER_REAL = ("docker", "dockerd", "containerd", "apt-get", "dpkg", "dpkg-deb", "id", "pkill", "pgrep", "setsid",
              "df", "systemctl", "kill", "killall")
ENGINE_PACKAGES = ("docker.io", "containerd", "docker-buildx", "docker-cli", "tini-static")


def _constant(name: str) -> int:
    found = re.search(rf"^{name}=(\d+)$", SCRIPT.read_text(), re.MULTILINE)
    assert found, f"{name} is not set in {SCRIPT}"
    return int(found.group(1))


FRESH_DISK_GB = _constant("FRESH_DISK_GB")
WARM_DISK_GB = _constant("WARM_DISK_GB")

# @STATE@ holds what the fake engine is (a file per fact) and `calls`, one line per fake's call; @BIN@ is the
# script's PATH; @PKG@ holds what `apt-get install` puts on it (dockerd, containerd); @CONFIG@ is where the
# script writes daemon.json.
FAKES = {
    "docker": r"""
[ -e @STATE@/up ] || { echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock." >&2; exit 1; }
case "$1" in
    info)
        case "$*" in
            *DriverStatus*) cat @STATE@/driver-status ;;
            *DockerRootDir*) echo /var/lib/docker ;;
            *Driver*) cat @STATE@/driver ;;
        esac ;;
    version) cat @STATE@/version ;;
    buildx) [ -e @STATE@/buildx ] || { echo "docker: 'buildx' is not a docker command." >&2; exit 1; }
            echo "github.com/docker/buildx 0.30.1" ;;
    images) cat @STATE@/standins ;;
    *) exit 1 ;;
esac
""",
    "apt-get": r"""
case " $* " in
    *" update "*) ;;
    *" download "*)
        [ ! -e @STATE@/download-fails ] || { echo "E: Can't find a source to download version" >&2; exit 100; }
        listing=
        for argument; do
            [ -z "$listing" ] || touch "${argument}_1_amd64.deb"
            [ "$argument" != download ] || listing=1
        done ;;
    *" install "*)
        [ ! -e @STATE@/install-fails ] || { echo "E: Sub-process /usr/bin/dpkg returned an error code (1)"; exit 100; }
        cp @PKG@/dockerd @PKG@/containerd @BIN@/
        echo 29.1.3 > @STATE@/version
        touch @STATE@/buildx ;;
esac
""",
    "id": r"""
if [ "$1" = -u ]; then cat @STATE@/uid; else echo "uid=$(cat @STATE@/uid)"; fi
""",
    "pkill": r"""
[ -e @STATE@/up ] || exit 1
rm -f @STATE@/up
""",
    "pgrep": "exit 1\n",
    "setsid": 'exec "$@"\n',
    "df": r"""
echo "Filesystem     1024-blocks      Used Available Capacity Mounted on"
echo "/dev/vda1      999999999 1 $(($(cat @STATE@/free-gb) * 1048576 + 1000)) 50% /var/lib/docker"
""",
}
# On the PATH once installed: a dockerd that reads daemon.json as the real one does, or fails as told.
PACKAGED = {
    "dockerd": r"""
if [ "$1" = --version ]; then echo "Docker version $(cat @STATE@/version)+dfsg1, build 0a1b2c3"; exit 0; fi
if [ -e @STATE@/dockerd-fails ]; then
    echo "failed to start daemon: error initializing graphdriver: driver not supported: overlay2"
    exit 1
fi
if grep -q containerd-snapshotter @CONFIG@/daemon.json 2>/dev/null; then
    echo "[[driver-type io.containerd.snapshotter.v1]]" > @STATE@/driver-status
else
    echo "[[Backing Filesystem extfs] [Supports d_type true]]" > @STATE@/driver-status
fi
touch @STATE@/up
""",
    "containerd": 'echo "containerd github.com/containerd/containerd/v2 2.1.4 75cb2b7"\n',
}


class Host:
    """A folder standing in for the host: by default a running Docker 29.1.3 with buildx and the containerd
    image store, dockerd installed, run as root, 100 GB free on the engine's disk, no stand-in built."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin, self.pkg, self.state = root / "bin", root / "pkg", root / "state"
        self.config, self.tmp, self.log = root / "etc-docker", root / "tmp", root / "dockerd.log"
        for folder in (self.bin, self.pkg, self.state, self.tmp):
            folder.mkdir()
        for name in REAL_TOOLS:
            real = shutil.which(name)
            assert real, f"{name} is not on this machine"
            (self.bin / name).symlink_to(real)
        for folder, fakes in ((self.bin, FAKES), (self.pkg, PACKAGED)):
            for name, body in fakes.items():
                self._write_fake(folder / name, body)
        self.put("calls")
        self.facts(up="", version="29.1.3", buildx="", driver="overlayfs", uid="0", standins="", free_gb="100",
                   driver_status="[[driver-type io.containerd.snapshotter.v1]]")
        self.install_dockerd()
        path = str(self.bin)
        for name in NEVER_REAL:
            found = shutil.which(name, path=path)
            assert found is None or Path(found).parent == self.bin, f"{found} would be this machine's own"

    def _write_fake(self, path: Path, body: str) -> None:
        text = (body.replace("@STATE@", str(self.state)).replace("@BIN@", str(self.bin))
                .replace("@PKG@", str(self.pkg)).replace("@CONFIG@", str(self.config)))
        path.write_text(f'#!/bin/sh\necho "{path.name} $*" >> {self.state}/calls\n{text}')
        path.chmod(0o755)

    def put(self, name: str, text: str = "") -> None:
        (self.state / name).write_text(text)

    def facts(self, **facts: str | None) -> None:
        """Each fact a file in the state folder (driver_status -> driver-status); None removes it."""
        for name, value in facts.items():
            path = self.state / name.replace("_", "-")
            if value is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(value if value.endswith("\n") or not value else f"{value}\n")

    def install_dockerd(self) -> None:
        for name in PACKAGED:
            shutil.copy(self.pkg / name, self.bin / name)

    def nothing_installed(self) -> None:
        """No dockerd on the PATH and no engine answering."""
        for name in PACKAGED:
            (self.bin / name).unlink()
        self.facts(up=None, buildx=None, version=None)

    def run(self, step: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """The step with nothing of this shell's environment: CI, PUDEV_REPLACE_ENGINE and the like only where
        `env` gives them."""
        base = {"PATH": str(self.bin), "HOME": str(self.root), "TMPDIR": str(self.tmp), "LC_ALL": "C",
                "PUDEV_DOCKER": str(self.bin / "docker"), "PUDEV_DOCKER_CONFIG_DIR": str(self.config),
                "PUDEV_ENGINE_LOG": str(self.log), "PUDEV_ENGINE_WAIT_S": "10"}
        return subprocess.run(["/bin/sh", str(SCRIPT), step], capture_output=True, text=True, check=False,
                              timeout=60, cwd=self.root, env={**base, **(env or {})})

    def calls(self, program: str) -> list[str]:
        """What `program` was asked, in order, without its name."""
        lines = (self.state / "calls").read_text().splitlines()
        return [line.removeprefix(f"{program} ").strip() for line in lines if line.split(" ", 1)[0] == program]

    def installs(self) -> list[str]:
        return [call for call in self.calls("apt-get") if " install " in f" {call} "]

    def leftovers(self) -> list[str]:
        return sorted(path.name for path in self.tmp.iterdir())


@pytest.fixture
def host(tmp_path: Path) -> Host:
    return Host(tmp_path)


def refusal(result: subprocess.CompletedProcess[str], after: str | None = None) -> str:
    """The one line a refused step says: non-zero, no traceback, and nothing else on stderr but, where `after`
    names its start, the progress line the step printed before it went wrong."""
    assert result.returncode != 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    if after is None:
        assert len(lines) == 1, result.stderr
    else:
        assert len(lines) == 2 and lines[0].startswith(after), result.stderr
    return lines[-1]


# engine: an engine that answers


def test_an_engine_of_28_or_newer_with_the_containerd_store_is_used_as_it_is(host: Host) -> None:
    result = host.run("engine")
    assert result.returncode == 0, result.stderr
    assert "Docker 29.1.3" in result.stderr and "containerd image store" in result.stderr
    assert not host.calls("apt-get") and not host.calls("pkill") and not host.calls("setsid")
    assert not host.config.exists()


def test_an_engine_of_28_or_newer_with_a_graph_driver_says_which(host: Host) -> None:
    host.facts(version="28.5.2", driver="overlay2", driver_status="[[Backing Filesystem extfs] [Supports d_type true]]")
    result = host.run("engine")
    assert result.returncode == 0, result.stderr
    assert "overlay2 graph driver" in result.stderr and "containerd image store" not in result.stderr
    assert not host.calls("apt-get") and not host.calls("pkill")


def test_docker_20_10_stops_with_one_line_naming_the_opt_in_and_installs_nothing(host: Host) -> None:
    host.facts(version="20.10.24+dfsg1")
    line = refusal(host.run("engine"))
    assert "PUDEV_REPLACE_ENGINE=1" in line and "20.10.24" in line and "28" in line
    assert not host.installs() and not host.calls("apt-get")
    assert not host.calls("pkill") and not host.config.exists()


@pytest.mark.parametrize("opt_in", [{"PUDEV_REPLACE_ENGINE": "1"}, {"CI": "true"}])
def test_the_opt_in_or_ci_replaces_an_old_engine_with_sids(host: Host, opt_in: dict[str, str]) -> None:
    host.facts(version="20.10.24+dfsg1", buildx=None, driver="overlay2",
               driver_status="[[Backing Filesystem extfs]]")
    result = host.run("engine", opt_in)
    assert result.returncode == 0, result.stderr
    assert "replacing Docker 20.10.24" in result.stderr
    assert "engine: Docker 29.1.3, buildx, the containerd image store" in result.stderr
    assert host.calls("pkill") == ["-x dockerd"]
    [install] = host.installs()
    assert all(f"/debs/{package}_1_amd64.deb" in install for package in ENGINE_PACKAGES), install
    assert "containerd-snapshotter" in (host.config / "daemon.json").read_text()
    assert host.leftovers() == []


def test_an_engine_without_buildx_stops_naming_the_package(host: Host) -> None:
    host.facts(buildx=None)
    line = refusal(host.run("engine"))
    assert "docker-buildx" in line and "29.1.3" in line
    assert not host.calls("apt-get")


# engine: a dockerd to start


def test_a_stopped_dockerd_is_started_in_the_background(host: Host) -> None:
    host.facts(up=None)
    result = host.run("engine")
    assert result.returncode == 0, result.stderr
    assert host.calls("setsid") == ["dockerd"]
    assert str(host.log) in result.stderr and "containerd image store" not in result.stderr  # no daemon.json
    assert not host.calls("apt-get")


def test_a_dockerd_that_never_answers_names_its_log(host: Host) -> None:
    host.facts(up=None)
    host.put("dockerd-fails")
    line = refusal(host.run("engine", {"PUDEV_ENGINE_WAIT_S": "1"}), after="host-setup: starting dockerd")
    assert "did not come up within 1 s" in line and str(host.log) in line
    assert "error initializing graphdriver" in line  # the log's last line
    assert not host.calls("apt-get")


def test_without_root_it_says_how_to_start_the_engine(host: Host) -> None:
    host.facts(up=None, uid="1000")
    line = refusal(host.run("engine"))
    assert "systemctl start docker" in line
    assert not host.calls("setsid")


# engine: no engine at all


def test_a_host_without_an_engine_gets_sids_with_the_containerd_store(host: Host) -> None:
    host.nothing_installed()
    result = host.run("engine")
    assert result.returncode == 0, result.stderr
    apt = host.calls("apt-get")
    assert [call.rsplit(" -q ", 1)[-1] for call in apt[:2]] == ["update", f"download {' '.join(ENGINE_PACKAGES)}"]
    assert "Dir::Etc::SourceList=" in apt[0]  # its own sources: the host's are not touched
    [install] = host.installs()
    assert all(f"/debs/{package}_1_amd64.deb" in install for package in ENGINE_PACKAGES), install
    assert "installed Debian sid's Docker version 29.1.3" in result.stderr and "containerd 2.1.4" in result.stderr
    assert "engine: Docker 29.1.3, buildx, the containerd image store" in result.stderr
    assert (host.config / "daemon.json").read_text() == '{"features": {"containerd-snapshotter": true}}\n'
    assert host.calls("setsid") == ["dockerd"]
    assert host.leftovers() == []


def test_a_daemon_json_someone_wrote_is_left_as_it_is(host: Host) -> None:
    host.nothing_installed()
    host.config.mkdir()
    (host.config / "daemon.json").write_text('{"data-root": "/srv/docker"}\n')
    result = host.run("engine")
    assert result.returncode == 0, result.stderr
    assert (host.config / "daemon.json").read_text() == '{"data-root": "/srv/docker"}\n'
    assert "graph driver" in result.stderr


def test_a_failed_sid_download_installs_nothing(host: Host) -> None:
    host.nothing_installed()
    host.put("download-fails")
    line = refusal(host.run("engine"))
    assert "nothing was installed" in line and "docker.io" in line
    assert any(" download " in f" {call} " for call in host.calls("apt-get"))
    assert not host.installs()
    assert not host.calls("pkill") and not host.config.exists()
    assert host.leftovers() == []


def test_a_failed_install_says_apts_last_line(host: Host) -> None:
    host.nothing_installed()
    host.put("install-fails")
    line = refusal(host.run("engine"))
    assert "dpkg returned an error code" in line and "as they were" in line
    assert len(host.installs()) == 1 and not host.calls("setsid")
    assert host.leftovers() == []


def test_without_root_a_host_without_an_engine_is_told_how_to_install_one(host: Host) -> None:
    host.nothing_installed()
    host.facts(uid="1000")
    line = refusal(host.run("engine"))
    assert "docs.docker.com/engine/install" in line and "buildx" in line
    assert not host.calls("apt-get")


# disk


ENGINE_LINE = "host-setup: engine: Docker 29.1.3"


def test_a_first_run_asks_for_the_fresh_space_and_names_what_is_free(host: Host) -> None:
    host.facts(free_gb="12")
    line = refusal(host.run("disk"), after=ENGINE_LINE)
    assert f"needs {FRESH_DISK_GB} GB" in line and "12 GB free" in line and "first test run" in line
    assert "docker system df" in line  # the fix
    assert "images -q --filter label=org.pudev.standin.recipe" in host.calls("docker")
    assert host.calls("df") == ["-P -k /var/lib/docker"]


def test_with_stand_ins_built_the_warm_need_applies(host: Host) -> None:
    host.facts(standins="0123456789ab", free_gb=str(WARM_DISK_GB - 1))
    line = refusal(host.run("disk"), after=ENGINE_LINE)
    assert f"needs {WARM_DISK_GB} GB" in line and f"{WARM_DISK_GB - 1} GB free" in line
    assert "first test run" not in line
    host.facts(free_gb=str(WARM_DISK_GB + 1))  # below a first run's need, enough for a warm one
    assert WARM_DISK_GB + 1 < FRESH_DISK_GB
    result = host.run("disk")
    assert result.returncode == 0, result.stderr


def test_pudev_disk_gb_overrides_either_need(host: Host) -> None:
    host.facts(standins="0123456789ab", free_gb=str(FRESH_DISK_GB + 10))
    line = refusal(host.run("disk", {"PUDEV_DISK_GB": str(FRESH_DISK_GB + 50)}), after=ENGINE_LINE)
    assert "PUDEV_DISK_GB" in line and f"needs {FRESH_DISK_GB + 50} GB" in line
    host.facts(standins="", free_gb="12")
    result = host.run("disk", {"PUDEV_DISK_GB": "5"})
    assert result.returncode == 0, result.stderr


def test_disk_stops_at_a_refused_engine_without_asking_the_disk(host: Host) -> None:
    host.facts(version="20.10.24+dfsg1")
    line = refusal(host.run("disk"))
    assert "PUDEV_REPLACE_ENGINE=1" in line
    assert not host.calls("df")
