"""Build the stand-in images (OS, PyTorch base, CUDA toolkits) idempotently.

Each stand-in carries a label with the hash of its recipe (Dockerfile, the
scripts it mounts, its arguments). An image whose label matches is kept, so a
second run costs seconds and survives `docker builder prune`.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pudev.common.errors import PudevError
from pudev.common.inputs import InputFile
from pudev.config.profiles import standins_input
from pudev.engine import builds, docker, images
from pudev.paths import REPO_ROOT, cache_dir

RECIPE_LABEL = "org.pudev.standin.recipe"
_MOUNT_SOURCE = re.compile(r"--mount=type=bind,source=([^,\s]+)")


@dataclass(frozen=True)
class StandIn:
    name: str
    image: str
    dockerfile: str  # empty for the debootstrapped OS image
    args: dict[str, str]

    def recipe(self, os_recipe: str = "") -> str:
        """Hash of the Dockerfile, the files it bind-mounts, and the arguments."""
        digest = hashlib.sha256(os_recipe.encode())
        if self.dockerfile:
            text = (REPO_ROOT / self.dockerfile).read_text()
            digest.update(text.encode())
            for source in sorted(set(_MOUNT_SOURCE.findall(text))):
                digest.update((REPO_ROOT / source).read_bytes())
        for key, value in sorted(self.args.items()):
            digest.update(f"{key}={value}\n".encode())
        return digest.hexdigest()[:16]


def load_standins(source: InputFile | None = None) -> list[StandIn]:
    raw = (source or standins_input()).read_toml()
    # The OS image has no Dockerfile: its recipe is the code that makes it.
    steps = hashlib.sha256("".join(inspect.getsource(step) for step in _OS_STEPS).encode()).hexdigest()
    os_recipe = {"SUITE": raw["os"]["suite"], "STEPS": steps}
    found = [StandIn("os", raw["os"]["image"], "", os_recipe)]
    for name, table in raw["pytorch"].items():
        found.append(StandIn(f"pytorch-{name}", table["image"], table["dockerfile"], table["args"]))
    for version, table in raw["toolkits"].items():
        found.append(StandIn(f"cuda-{version}", table["image"], table["dockerfile"], table["args"]))
    return found


def _current_recipe(image: str) -> str | None:
    info = docker.inspect_image(image)
    return None if info is None else images.labels_of(info).get(RECIPE_LABEL, "")


@contextmanager
def root_directory(parent: Path) -> Iterator[Path]:
    """An empty directory for a root filesystem, removed afterwards, with the mode `/` has in a real image.

    mkdtemp makes it 0700, and the tar of it records that as the image's `/`: Docker ignores it,
    but rootless podman on vfs applies it, and then no user but root can run anything."""
    with tempfile.TemporaryDirectory(prefix="rootfs-", dir=parent) as made:
        os.chmod(made, 0o755)
        yield Path(made)


def rootfs_tar(rootfs: Path) -> list[str]:
    """The command that writes `rootfs` as a tar stream, its root directory as `./` (what docker import reads)."""
    return ["tar", "-C", str(rootfs), "-c", "."]


def _build_os(standin: StandIn, recipe: str) -> None:
    if os.geteuid() != 0:
        raise PudevError("debootstrap needs root to build the OS stand-in: run `sudo pudev standins`")
    if shutil.which("debootstrap") is None:
        raise PudevError("debootstrap is not installed: run `sudo apt-get install -y debootstrap`")
    suite = standin.args["SUITE"]
    with root_directory(cache_dir()) as rootfs:
        print(f"pudev: debootstrap --variant=minbase {suite} (default mirror)", flush=True)
        subprocess.run(["debootstrap", "--variant=minbase", suite, str(rootfs)], check=True,
                       stdout=subprocess.DEVNULL)
        # Like the distributions' official images: no package lists, downloaded .debs or caches.
        for leftover in ("var/lib/apt/lists", "var/cache/apt"):
            for path in (rootfs / leftover).rglob("*"):
                if path.is_file() and path.name != "lock":
                    path.unlink()
        tar = subprocess.Popen(rootfs_tar(rootfs), stdout=subprocess.PIPE)
        builds.import_tar(tar.stdout, standin.image, changes=[f"LABEL {RECIPE_LABEL}={recipe}", 'CMD ["bash"]'])
        if tar.wait() != 0:
            raise PudevError("tar of the debootstrapped root filesystem failed; rerun `pudev standins`")


# Every function whose code shapes the OS image: a change to any of them rebuilds it.
_OS_STEPS = (root_directory, rootfs_tar, _build_os, builds.import_tar)


def _build_image(standin: StandIn, os_image: str, recipe: str, ca_bundle: Path | None) -> None:
    args = ["--progress=plain", "--file", str(REPO_ROOT / standin.dockerfile),
            "--build-arg", f"OS_IMAGE={os_image}", "--label", f"{RECIPE_LABEL}={recipe}", "--tag", standin.image]
    for key, value in standin.args.items():
        args += ["--build-arg", f"{key}={value}"]
    if ca_bundle is not None:
        args += ["--secret", f"id=ca,src={ca_bundle}"]
    returncode = builds.build([*args, str(REPO_ROOT)])
    if returncode != 0:
        raise PudevError(f"stand-in {standin.image} failed to build (docker exit {returncode}); "
                         "see the log above")


def build_standins(ca_bundle: Path | None, *, out: Any = sys.stdout) -> list[str]:
    """Build what is missing or stale; returns one status line per stand-in."""
    docker.require_daemon()
    standins = load_standins()
    os_standin = standins[0]
    os_recipe = os_standin.recipe()
    report = []
    for standin in standins:
        recipe = standin.recipe() if standin is os_standin else standin.recipe(os_recipe)
        if _current_recipe(standin.image) == recipe:
            report.append(f"{standin.image}: cached")
            continue
        print(f"pudev: building stand-in {standin.image}", file=out, flush=True)
        replaced = docker.image_id(standin.image)
        if standin is os_standin:
            _build_os(standin, recipe)
        else:
            _build_image(standin, os_standin.image, recipe, ca_bundle)
        if replaced:
            docker.drop_if_untagged(replaced)
        report.append(f"{standin.image}: built")
    return report
