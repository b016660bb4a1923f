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
from pudev.common.platforms import architecture, native_platform
from pudev.config.profiles import standins_input
from pudev.config.rules import PLATFORM_SUFFIX
from pudev.engine import builds, docker, emulation, images
from pudev.paths import REPO_ROOT, cache_dir

RECIPE_LABEL = "org.pudev.standin.recipe"
_MOUNT_SOURCE = re.compile(r"--mount=type=bind,source=([^,\s]+)")


NATIVE = "linux/amd64"  # stand-ins for it keep their plain names; others add the platform's suffix


@dataclass(frozen=True)
class StandIn:
    name: str
    image: str
    dockerfile: str  # empty for the debootstrapped OS image
    args: dict[str, str]
    platform: str = NATIVE

    def recipe(self, os_recipe: str = "") -> str:
        """Hash of the Dockerfile, the files it bind-mounts, the arguments and the platform."""
        digest = hashlib.sha256(os_recipe.encode())
        if self.platform != NATIVE:
            digest.update(self.platform.encode())
        if self.dockerfile:
            text = (REPO_ROOT / self.dockerfile).read_text()
            digest.update(text.encode())
            for source in sorted(set(_MOUNT_SOURCE.findall(text))):
                digest.update((REPO_ROOT / source).read_bytes())
        for key, value in sorted(self.args.items()):
            digest.update(f"{key}={value}\n".encode())
        return digest.hexdigest()[:16]


def on_platform(image: str, platform: str) -> str:
    """A stand-in's name on `platform`: the local engine keeps one platform per tag."""
    return image + PLATFORM_SUFFIX[platform]


def _each_platform(name: str, table: dict[str, Any], dockerfile: str, args: dict[str, str]) -> list[StandIn]:
    """One stand-in per platform the table lists (linux/amd64 alone when it lists none); `args_on`
    holds the arguments that differ on a platform (a wheel missing there, say)."""
    return [StandIn(name if platform == NATIVE else f"{name}-{architecture(platform)}",
                    on_platform(table["image"], platform), dockerfile,
                    {**args, **table.get("args_on", {}).get(platform, {})}, platform)
            for platform in table.get("platforms", [NATIVE])]


def load_standins(source: InputFile | None = None) -> list[StandIn]:
    """Every stand-in on every platform, the OS images first (the others are built on them)."""
    raw = (source or standins_input()).read_toml()
    # The OS image has no Dockerfile: its recipe is the code that makes it.
    found: list[StandIn] = []
    for platform in raw["os"].get("platforms", [NATIVE]):
        steps = _OS_STEPS if platform == NATIVE else _FOREIGN_OS_STEPS
        code = hashlib.sha256("".join(inspect.getsource(step) for step in steps).encode()).hexdigest()
        found += [standin for standin in _each_platform("os", raw["os"], "", {"SUITE": raw["os"]["suite"],
                                                                               "STEPS": code})
                  if standin.platform == platform]
    for name, table in raw["pytorch"].items():
        found += _each_platform(f"pytorch-{name}", table, table["dockerfile"], table["args"])
    for version, table in raw["toolkits"].items():
        found += _each_platform(f"cuda-{version}", table, table["dockerfile"], table["args"])
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


def _build_foreign_os(standin: StandIn, recipe: str) -> None:
    """The OS stand-in for another platform: debootstrap --arch (its packages configure under binfmt
    emulation), then an image of that platform made from the tar. It repeats _build_os's few steps on purpose: that
    function's code is the native stand-ins' recipe, so editing it would rebuild every native stand-in
    and everything built on them; merge the two when a recipe change rebuilds them anyway."""
    suite, arch = standin.args["SUITE"], architecture(standin.platform)
    with root_directory(cache_dir()) as rootfs:
        print(f"pudev: debootstrap --arch={arch} --variant=minbase {suite} (default mirror)", flush=True)
        subprocess.run(["debootstrap", f"--arch={arch}", "--variant=minbase", suite, str(rootfs)], check=True,
                       stdout=subprocess.DEVNULL)
        for leftover in ("var/lib/apt/lists", "var/cache/apt"):
            for path in (rootfs / leftover).rglob("*"):
                if path.is_file() and path.name != "lock":
                    path.unlink()
        tar = subprocess.Popen(rootfs_tar(rootfs), stdout=subprocess.PIPE)
        builds.image_from_tar(tar.stdout, standin.image, changes=[f"LABEL {RECIPE_LABEL}={recipe}", 'CMD ["bash"]'],
                              platform=standin.platform, scratch=cache_dir())
        if tar.wait() != 0:
            raise PudevError("tar of the debootstrapped root filesystem failed; rerun `pudev standins`")


_FOREIGN_OS_STEPS = (root_directory, rootfs_tar, _build_foreign_os, builds.image_from_tar)


def _build_image(standin: StandIn, os_image: str, recipe: str, ca_bundle: Path | None) -> None:
    # BUILD_OS_IMAGE: what a recipe's build-platform stage runs on (this host's OS stand-in, never emulated).
    args = ["--progress=plain", "--file", str(REPO_ROOT / standin.dockerfile), "--platform", standin.platform,
            "--build-arg", f"OS_IMAGE={on_platform(os_image, standin.platform)}",
            "--build-arg", f"BUILD_OS_IMAGE={on_platform(os_image, native_platform())}",
            "--label", f"{RECIPE_LABEL}={recipe}", "--tag", standin.image]
    for key, value in standin.args.items():
        args += ["--build-arg", f"{key}={value}"]
    if ca_bundle is not None:
        args += ["--secret", f"id=ca,src={ca_bundle}"]
    returncode = builds.build([*args, str(REPO_ROOT)])
    if returncode != 0:
        raise PudevError(f"stand-in {standin.image} failed to build (docker exit {returncode}); "
                         "see the log above")


def images_of_profile(profile: str, platform: str = "") -> set[str]:
    """The stand-in images `pudev build --profile PROFILE [--platform PLATFORM]` builds from."""
    from pudev.config.selection import Selection, resolve

    (build,) = resolve(Selection(profile=profile, platform=platform)).variants
    return {build.base_image, build.build_platform_image, *(toolkit.image for toolkit in build.toolkits)} - {""}


def build_standins(ca_bundle: Path | None, *, platform: str = "", profile: str = "",
                   out: Any = sys.stdout) -> list[str]:
    """Build what is missing or stale (for `platform` alone when one is named, and only what `profile`'s
    builds name when one is); returns one status line per stand-in."""
    docker.require_daemon()
    every = load_standins()
    standins = [standin for standin in every if platform in ("", standin.platform)]
    if profile:
        named = images_of_profile(profile, platform)
        platforms = {standin.platform for standin in every if standin.image in named}
        # Every other stand-in is built on the OS image, so a named platform needs its OS and the native one.
        standins = [standin for standin in every if standin.image in named
                    or (not standin.dockerfile and standin.platform in platforms | {NATIVE})]
    for needed in dict.fromkeys(standin.platform for standin in standins):
        emulation.require_runnable(needed, "pudev standins")
    os_recipes = {standin.platform: standin.recipe() for standin in standins if not standin.dockerfile}
    os_image = next(standin.image for standin in every if not standin.dockerfile)  # the native name
    report = []
    for standin in standins:
        is_os = not standin.dockerfile
        recipe = os_recipes[standin.platform] if is_os else standin.recipe(os_recipes[standin.platform])
        if _current_recipe(standin.image) == recipe:
            report.append(f"{standin.image}: cached")
            continue
        print(f"pudev: building stand-in {standin.image}", file=out, flush=True)
        replaced = docker.image_id(standin.image)
        if is_os:
            (_build_os if standin.platform == NATIVE else _build_foreign_os)(standin, recipe)
        else:
            _build_image(standin, os_image, recipe, ca_bundle)
        if replaced:
            docker.drop_if_untagged(replaced)
        report.append(f"{standin.image}: built")
    return report
