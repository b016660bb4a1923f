"""Run-time behaviour that needs a container from outside: root-only mirror
switching, host UID mapping and the start hooks around its drop, cleanliness as root,
and layer waste."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from e2e_support import LocalImage, profile_variant
from kept_between_runs import layers_by_id
from shards import newest_profile

from pudev.engine import docker
from pudev.engine.layers import base_layer_count, find_waste

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def _run_root(image: LocalImage, script: str, *options: str) -> str:
    return docker.run(["run", "--rm", "--user", "0", *options, image.tag, "sh", "-c", script], timeout=600).stdout


def test_apt_mirror_switch_as_root_and_back(newest_image: LocalImage) -> None:
    out = _run_root(newest_image, "pudev mirror tuna >/dev/null && cat /etc/apt/sources.list; echo ===; "
                                 "pudev mirror none >/dev/null && cat /etc/apt/sources.list; echo ===; "
                                 "cat /etc/pudev/mirror/original/etc/apt/sources.list; echo ===; "
                                 "pudev mirror aliyun && cat /etc/apt/sources.list")
    tuna, restored, original, aliyun = out.split("===\n")
    assert "mirrors.tuna.tsinghua.edu.cn" in tuna
    assert restored == original and "mirrors." not in restored
    assert "apt: aliyun" in aliyun and "mirrors.aliyun.com" in aliyun


def test_base_sources_restored_by_none_really_work(newest_image: LocalImage) -> None:
    out = _run_root(newest_image, "pudev mirror none >/dev/null && apt-get update -q >/dev/null && echo apt-ok; "
                                 "rm -rf /var/lib/apt/lists/*")
    assert out.strip().endswith("apt-ok")


def test_host_uid_mapping_for_bind_mounts(newest_image: LocalImage, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    os.chown(workspace, 4321, 4321)
    out = _run_root(newest_image, "id -u; id -g; stat -c %u:%g $HOME; touch /workspace/made-here && echo wrote",
                    "--env", "PUDEV_UID=4321", "--env", "PUDEV_GID=4321", "--volume", f"{workspace}:/workspace")
    assert out.split() == ["4321", "4321", "4321:4321", "wrote"]
    made = workspace / "made-here"
    assert (made.stat().st_uid, made.stat().st_gid) == (4321, 4321)


def test_start_hooks_run_as_root_then_as_the_mapped_user(newest_image: LocalImage) -> None:
    """A root start with PUDEV_UID: the system hooks as root with root's HOME, the user's after
    the drop as that user in the user's home, and the exports of both reach the command."""
    script = ("mkdir -p /etc/pudev/start.d /home/dev/.config/pudev/start.d"
              " && echo 'export SYSTEM=\"$(id -u) $HOME\"' > /etc/pudev/start.d/10-system.sh"
              " && echo 'export MINE=\"$(id -u) $HOME\"' > /home/dev/.config/pudev/start.d/10-mine.sh"
              " && PUDEV_UID=4321 PUDEV_GID=4321 exec pudev-entrypoint sh -c 'echo \"$SYSTEM|$MINE|$(id -u)\"'")
    assert _run_root(newest_image, script).strip() == "0 /root|4321 /home/dev|4321"


def test_no_caches_anywhere_when_checked_as_root(newest_image: LocalImage) -> None:
    result = docker.run(["run", "--rm", "--user", "0", newest_image.tag, "pudev", "selftest", "--",
                         "-q", "-k", "test_no_cache_files_in_the_image"], check=False, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "1 passed" in result.stdout


def test_no_layer_adds_what_a_later_layer_deletes_or_overwrites(newest_image: LocalImage) -> None:
    base = profile_variant(newest_profile()).base_image
    layers = layers_by_id(newest_image.tag, newest_image.image_id)  # by image id, kept between runs
    first_own = base_layer_count(base)
    assert len(layers) > first_own
    waste = find_waste(layers, first_own, threshold=1_000_000)
    # Python packages, of any size: the two package steps install disjoint parts of the lock, and no
    # later step may rewrite an earlier one's files.
    waste += [w for w in find_waste(layers, first_own) if "-packages/" in w.path and w.size <= 1_000_000]
    assert not waste, [f"{w.path} ({w.size} B) added in layer {w.added_in}, {w.how} in {w.undone_in}"
                       for w in waste[:10]]


def test_login_shells_keep_the_environment_as_root(newest_image: LocalImage) -> None:
    result = docker.run(["run", "--rm", "--user", "0", newest_image.tag, "pudev", "selftest", "--", "-q",
                         "-k", "login_shell"], check=False, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert " passed" in result.stdout and not any(word in result.stdout for word in ("failed", "skipped", "error"))


def test_a_deleted_toolkit_is_missing_everywhere(newest_image: LocalImage) -> None:
    """Delete the default toolkit for real: cuda-switch lists it missing and refuses it, and
    verify's advice (pick an installed toolkit with cuda-switch --list) holds."""
    record = json.loads(docker.run(["run", "--rm", newest_image.tag, "pudev", "record"]).stdout)
    default = record["default_toolkit"]
    other = next(t["version"] for t in record["toolkits"] if t["version"] != default)
    out = _run_root(newest_image, f"rm -rf /usr/local/cuda-{default}; cuda-switch --list 2>&1; "
                                 f"echo ===; cuda-switch {default} 2>&1; echo rc=$?; echo ===; pudev verify --cpu; "
                                 "echo rc=$?")
    listed, switched, verified = out.split("===\n")
    assert f"{default}  /usr/local/cuda-{default}  [missing: no /usr/local/cuda-{default}/bin/nvcc]" in listed
    assert f"switch to an installed one: {other}" in listed
    assert f"CUDA {default} was built into this image but" in switched and "rc=2" in switched
    assert f"CUDA_HOME='/usr/local/cuda-{default}'" in verified  # the problem, where it came from, the fix
    assert "cuda-switch --list" in verified and "rc=1" in verified
