"""Rootless podman as the dedicated non-root host user that `scripts/host-setup.sh podman`
makes, and the Docker engine's image brought into that user's storage once per image id: pulled
by digest from a registry, as a cluster node gets it, so only the layers podman lacks travel."""

from __future__ import annotations

import base64
import json
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pudev.engine import docker

# The same default as scripts/host-setup.sh, which creates the user and its storage.conf.
PODMAN_USER = os.environ.get("PUDEV_PODMAN_USER", "pudev-podman")
# What rootless podman needs here: slirp4netns cannot open /dev/net/tun (root-only), so no
# network; and there is no systemd to run the image's HEALTHCHECK timer (podman logs an error).
RUN_OPTIONS = ("--userns=keep-id", "--network", "none", "--no-healthcheck")
# What a pull needs, measured (2026-12-02, cu121, 7.46 GB): the pull staged the compressed blobs
# (3.4 GB) and freed them when it ended; the first keep-id run then made an id-shifted copy, and
# podman held 14.6 GB. So 2x the new layers at the peak, and 10% more for what else the run writes.
# Where podman holds an older build, that build and its keep-id copy are pruned first.
DISK_FACTOR = 2.2


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

    def pull(self, ref: str, image_id: str, *, tag: str, ca_file: Path, login: tuple[str, str],
             timeout: float = 1800) -> None:
        """`podman pull REF` (by digest) over TLS with token auth; tagged `tag` afterwards, so the image
        it replaces is left unnamed and pruned with its keep-id copy (about 15 GB together).

        A layer this storage holds from an earlier pull is not fetched again: podman knows it by its
        compressed digest, which a changed image's unchanged layers keep."""
        if not self._room_for(tag):
            # Room for what is new only by dropping the stale build: its shared layers then travel again.
            self.run("rmi", "--force", tag, check=False)
        if not self._room_for(tag):
            needed = DISK_FACTOR * self._missing_bytes(tag)
            raise AssertionError(f"pulling {tag} into rootless podman needs about {needed / 1e9:.0f} GB free "
                                 f"under {self.home}; {shutil.disk_usage(self.home).free / 1e9:.0f} GB is free")
        host = ref.split("/", 1)[0]
        with tempfile.TemporaryDirectory(prefix="pudev-podman-pull-") as folder:
            # The user reads the CA and its login from here; the login never appears on a command line.
            os.chmod(folder, 0o711)
            certs = Path(folder) / "certs"
            certs.mkdir(mode=0o755)
            shutil.copy(ca_file, certs / "ca.crt")
            (certs / "ca.crt").chmod(0o644)
            authfile = Path(folder) / "auth.json"
            encoded = base64.b64encode(":".join(login).encode()).decode()
            authfile.write_text(json.dumps({"auths": {host: {"auth": encoded}}}))
            authfile.chmod(0o600)
            os.chown(authfile, self.uid, -1)
            self.run("pull", "--quiet", "--cert-dir", str(certs), "--authfile", str(authfile), ref,
                     timeout=timeout)
        if not self.has_image(image_id):
            raise AssertionError(f"podman pulled {ref} but has no image {image_id}: the tag moved since the push")
        self.run("untag", image_id)  # the registry's name: that registry is gone by the next run
        self.run("tag", image_id, tag)
        self.run("image", "prune", "--force")

    def _held_layers(self) -> set[str]:
        """The diff ids of every layer podman's images have."""
        ids = self.run("images", "--quiet", "--no-trunc").stdout.split()
        if not ids:
            return set()
        found = self.run("image", "inspect", "--format", "{{json .RootFS.Layers}}", *set(ids)).stdout
        return {layer for line in found.splitlines() if line.strip() for layer in json.loads(line) or []}

    def _missing_bytes(self, tag: str) -> int:
        """The size of Docker's `tag` where podman lacks any of its layers, else 0: the engine gives no
        layer's size without a `docker save` (a minute or more), so all of it counts."""
        layers = (docker.inspect_image(tag) or {}).get("RootFS", {}).get("Layers") or []
        held = self._held_layers()
        return _size(tag) if any(layer not in held for layer in layers) else 0

    def _room_for(self, tag: str) -> bool:
        return shutil.disk_usage(self.home).free >= DISK_FACTOR * self._missing_bytes(tag)


def _size(tag: str) -> int:
    info = docker.inspect_image(tag)
    return int(info["Size"]) if info else 0
