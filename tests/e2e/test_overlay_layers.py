"""overlay_layers: a layer listed from the engine's storage says what `docker save` says of it, so the
layer-waste scan (test_container_behaviour.py) may read folders instead of streaming the image."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import overlay_layers
import pytest

from pudev.devtools.standins import load_standins
from pudev.engine import docker
from pudev.engine import layers as saved_layers

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="whiteouts (mknod) and trusted.* attributes need root")


@needs_root
def test_a_folder_lists_files_once_whiteouts_and_opaque_directories(tmp_path: Path) -> None:
    layer = tmp_path / "diff"
    (layer / "usr/bin").mkdir(parents=True)
    (layer / "usr/bin/tool").write_bytes(b"abc")
    os.link(layer / "usr/bin/tool", layer / "usr/bin/alias")  # one file, two names: counted once, as `alias`
    (layer / "usr/bin/link").symlink_to("tool")  # a link holds no data: not listed
    os.mknod(layer / "gone", 0o600 | 0o020000, os.makedev(0, 0))  # overlay's whiteout
    (layer / "fresh").mkdir()
    os.setxattr(layer / "fresh", overlay_layers.OPAQUE_ATTRIBUTE, b"y")
    (layer / "fresh/new").write_bytes(b"12345")
    listed = overlay_layers.read_folder(3, layer)
    assert (listed.index, listed.files, listed.deleted, listed.opaque) == (
        3, {"/fresh/new": 5, "/usr/bin/alias": 3}, ["/gone"], ["/fresh"])


@pytest.mark.engine
def test_an_image_listed_from_storage_matches_its_save(standins: None) -> None:
    """Every kind of change a build step makes (new, hard-linked, deleted, overwritten, a folder replaced
    whole, a folder renamed), on the small OS stand-in: listed from the folders, as the save lists it."""
    os_image, probe = load_standins()[0].image, "pudev-overlay-probe:layers"
    dockerfile = (f"FROM {os_image}\n"
                  "RUN mkdir -p /srv/a/b && printf 1234 > /srv/a/b/f && ln /srv/a/b/f /srv/a/g && rm /etc/issue\n"
                  "RUN printf 12 > /srv/a/b/f && rm -r /srv/a && mkdir -p /srv/a && printf x > /srv/a/h\n"
                  "RUN mv /srv/a /srv/renamed && rm -r /usr/share/doc && mkdir /usr/share/doc\n")
    subprocess.run([docker.docker_cli(), "build", "--quiet", "-t", probe, "-"], input=dockerfile, text=True,
                   capture_output=True, check=True, env=docker.docker_env())
    try:
        listed = overlay_layers.read_layers(probe)
        if listed is None:
            pytest.skip("this engine's storage is not overlay2 with native diffs: the scan uses `docker save`")
        saved = saved_layers.read_layers(probe)
        assert len(listed) == len(saved) >= 4
        # Layer 0 was imported (debootstrap's tar): of two hard links, the save names the one that tar met
        # first, and no walk can know it. Every layer a build made is compared whole.
        assert sum(listed[0].files.values()) == sum(saved[0].files.values())
        for mine, theirs in zip(listed[1:], saved[1:], strict=True):
            assert (mine.files, sorted(mine.deleted), sorted(mine.opaque)) == (
                theirs.files, sorted(theirs.deleted), sorted(theirs.opaque)), mine.index
        assert "/etc/issue" in listed[-3].deleted and listed[-3].files["/srv/a/b/f"] == 4
        assert "/usr/share/doc" in listed[-1].opaque
    finally:
        docker.run(["rmi", probe], check=False)
