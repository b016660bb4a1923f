"""scripts/host-setup.sh tidy against a recording stand-in for the docker client: what it prunes, and when."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pudev.paths import REPO_ROOT


def _tidy(tmp_path: Path, *, standins: bool = True, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    calls = tmp_path / "calls"
    docker = tmp_path / "docker"
    # Answers `info` with a folder on this disk and `images` with a stand-in's id or nothing; records every call
    # but `info`.
    images = "echo 0123456789ab" if standins else ":"
    docker.write_text(f'#!/bin/sh\nif [ "$1" = info ]; then echo {tmp_path}; exit 0; fi\necho "$*" >> {calls}\n'
                      f'if [ "$1" = images ]; then {images}; fi\n')
    docker.chmod(0o755)
    base = {key: value for key, value in os.environ.items() if not key.startswith("PUDEV_") and key != "CI"}
    result = subprocess.run(["sh", str(REPO_ROOT / "scripts/host-setup.sh"), "tidy"], capture_output=True, text=True,
                            check=False, env={**base, "PUDEV_DOCKER": str(docker), **env})
    return result, calls.read_text().splitlines() if calls.exists() else []


def test_midway_the_records_this_run_did_not_use_go_before_the_cap(tmp_path: Path) -> None:
    result, calls = _tidy(tmp_path, CI="true", PUDEV_BUILD_CACHE_UNUSED_FOR="1234s")
    assert result.returncode == 0, result.stderr
    prunes = [call for call in calls if call.startswith("builder prune")]
    assert prunes == ["builder prune -f --filter until=1234s", "builder prune -f --keep-storage 10GB"]


def test_at_the_start_only_the_cap_applies(tmp_path: Path) -> None:
    result, calls = _tidy(tmp_path, PUDEV_PRUNE_BUILD_CACHE="1", PUDEV_BUILD_CACHE_KEEP="3GB")
    assert result.returncode == 0, result.stderr
    assert [call for call in calls if call.startswith("builder")] == ["builder prune -f --keep-storage 3GB"]
    assert all("label=org.pudev" in call for call in calls if call.startswith("image prune"))


def test_a_developers_cache_is_never_pruned_and_short_disk_stops_the_run(tmp_path: Path) -> None:
    result, calls = _tidy(tmp_path, PUDEV_BUILD_CACHE_UNUSED_FOR="1234s", PUDEV_TEST_DISK_GB="999999")
    assert not [call for call in calls if call.startswith("builder")]
    assert result.returncode != 0
    assert "PUDEV_PRUNE_BUILD_CACHE=1" in result.stderr and "999999 GB" in result.stderr


def test_a_first_run_asks_for_the_space_a_first_run_needs(tmp_path: Path) -> None:
    first, calls = _tidy(tmp_path, standins=False, PUDEV_TEST_DISK_GB="1", PUDEV_FIRST_RUN_DISK_GB="999999")
    assert "images -q --filter label=org.pudev.standin.recipe" in calls
    assert first.returncode != 0
    assert "first test run" in first.stderr and "999999 GB" in first.stderr
    warm, _ = _tidy(tmp_path, standins=True, PUDEV_TEST_DISK_GB="1", PUDEV_FIRST_RUN_DISK_GB="999999")
    assert warm.returncode == 0, warm.stderr
