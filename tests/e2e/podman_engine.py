"""Rootless podman as the dedicated non-root host user that `scripts/host-setup.sh podman`
makes, and the Docker engine's image copied into that user's storage once per image id."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pudev.engine import docker

# The same default as scripts/host-setup.sh, which creates the user and its storage.conf.
PODMAN_USER = os.environ.get("PUDEV_PODMAN_USER", "pudev-podman")
# What rootless podman needs here: slirp4netns cannot open /dev/net/tun (root-only), so no
# network; and there is no systemd to run the image's HEALTHCHECK timer (podman logs an error).
RUN_OPTIONS = ("--userns=keep-id", "--network", "none", "--no-healthcheck")
# `podman load` copies stdin to a temporary file and stages every new blob before it applies
# the layers: about 3x the image's size at its peak (measured: 21.5 GB for a 7.45 GB image).
# Afterwards 2x stays: the image, and the id-shifted copy the first keep-id run makes of it.
DISK_FACTOR = 3


@dataclass(frozen=True)
class RootlessPodman:
    user: str
    uid: int
    home: Path

    @classmethod
    def for_user(cls, user: str = PODMAN_USER) -> RootlessPodman:
        entry = pwd.getpwnam(user)
        return cls(user=user, uid=entry.pw_uid, home=Path(entry.pw_dir))

    def command(self, *args: str) -> list[str]:
        # runuser, not sudo or su: no password, no login shell (the user's shell is nologin).
        return ["runuser", "-u", self.user, "--", "env", f"HOME={self.home}",
                f"XDG_RUNTIME_DIR=/run/user/{self.uid}", "podman", *args]

    def run(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
        # The user's home as the working directory: it may not be able to read the checkout.
        result = subprocess.run(self.command(*args), capture_output=True, text=True, timeout=timeout, check=False,
                                cwd=self.home)
        if check and result.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} as {self.user} exited {result.returncode}:\n"
                                 f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    def storage_driver(self) -> str:
        return self.run("info", "--format", "{{.Store.GraphDriverName}}").stdout.strip()

    def has_image(self, image_id: str) -> bool:
        return self.run("image", "exists", image_id, check=False).returncode == 0

    def ensure_image(self, tag: str, image_id: str, *, timeout: float = 1800) -> bool:
        """Make the Docker engine's `tag` (whose id is `image_id`) present here; True when it was loaded.

        Cached by image id: podman keeps the id Docker gave the image (both are the config's digest),
        so a rebuild that changes nothing costs one `podman image exists`."""
        if self.has_image(image_id):
            return False
        if not self._disk_suffices(tag):
            # The image under this tag is stale. Kept, its layers would spare the load what the two
            # share; where that does not fit, it goes first, with its keep-id copy.
            self.run("rmi", "--force", tag, check=False)
            self._require_disk(tag)
        # By tag, not id: an archive saved by id carries no name, and an unnamed image is dangling.
        save = subprocess.Popen([docker.docker_cli(), "save", tag], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=docker.docker_env())
        load = subprocess.run(self.command("load"), stdin=save.stdout, capture_output=True, text=True,
                              timeout=timeout, check=False, cwd=self.home)
        assert save.stdout is not None and save.stderr is not None
        save.stdout.close()
        saved = save.wait()
        save_error = save.stderr.read().decode()
        if saved != 0 or load.returncode != 0:
            raise AssertionError(f"docker save {tag} | podman load as {self.user}: docker exit {saved} "
                                 f"({docker.last_line(save_error)}), podman exit {load.returncode}:\n"
                                 f"{load.stderr[-3000:]}")
        if not self.has_image(image_id):
            raise AssertionError(f"podman loaded {tag} but has no image {image_id}: the tag moved during the save")
        # The image this one replaced kept no name: drop it and its keep-id copy (about 15 GB together).
        self.run("image", "prune", "--force")
        return True

    def _disk_suffices(self, tag: str) -> bool:
        return shutil.disk_usage(self.home).free >= DISK_FACTOR * _size(tag)

    def _require_disk(self, tag: str) -> None:
        if not self._disk_suffices(tag):
            size = _size(tag)
            raise AssertionError(f"loading {tag} ({size / 1e9:.1f} GB) into rootless podman needs about "
                                 f"{DISK_FACTOR * size / 1e9:.0f} GB free under {self.home}; "
                                 f"{shutil.disk_usage(self.home).free / 1e9:.0f} GB is free")


def _size(tag: str) -> int:
    info = docker.inspect_image(tag)
    return int(info["Size"]) if info else 0
