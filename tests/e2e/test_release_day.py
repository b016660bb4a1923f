"""Release day against the world: `pudev new-torch` asks the real package index (torch 2.15.0 and the CUDA
build `pip install torch` gives) and a registry that behaves like Docker Hub (TLS, token auth, redirected
blobs) holding fake official tags, and the daily workflow's check step runs as GitHub runs it. The index is
asked for 2.15.0 by name, so these hold after later releases too."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import run_pudev
from realistic_registry import RealisticRegistry
from ruamel.yaml import YAML

from pudev.building.labels import copy_paths
from pudev.devtools import new_torch
from pudev.paths import REPO_ROOT, VARIANTS_FILE
from pudev.registry import client as registry_client
from pudev.registry import oci
from pudev.registry.client import RegistryClient

FIXTURES = REPO_ROOT / "tests/fixtures/new-torch"
BEFORE = FIXTURES / "variants-2.14.1.toml"  # the matrix the day before 2.15.0 moved in
RELEASE = "2.15.0"
# What Docker Hub held of the two repositories, in small: older releases, a CPU tag, other flavours.
OFFICIAL_BEFORE = ("2.14.1-cuda12.6-cudnn9-runtime", "2.14.1-cuda13.2-cudnn9-runtime", "2.14.1-cuda13.2-cudnn9-devel",
                   f"{RELEASE}-runtime")
OFFICIAL_RELEASE = (f"{RELEASE}-cuda13.0-cudnn9-runtime", f"{RELEASE}-cuda13.2-cudnn9-runtime",
                    f"{RELEASE}-cuda13.2-cudnn9-devel")
NVIDIA = ("12.9.1-devel-ubuntu24.04", "13.0.2-devel-ubuntu24.04", "13.0.3-devel-ubuntu24.04",
          "13.0.3-cudnn-runtime-ubuntu24.04", "13.2.1-devel-ubuntu24.04", "13.2.1-cudnn-runtime-ubuntu24.04",
          "13.5.0-devel-ubuntu24.04", "13.10.0-devel-ubuntu22.04")


@pytest.fixture(scope="module")
def registry(realistic_registry: RealisticRegistry) -> Iterator[RealisticRegistry]:
    """Docker Hub's official repositories, as a reader sees them (the CA and credentials as a user has them)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in realistic_registry.env().items():
            patch.setenv(name, value)
        _tag(realistic_registry, "pytorch/pytorch", OFFICIAL_BEFORE)
        _tag(realistic_registry, "nvidia/cuda", NVIDIA)
        realistic_registry.use_credentials("reader")
        yield realistic_registry
    realistic_registry.use_credentials("pusher")


def _tag(registry: RealisticRegistry, repository: str, tags: tuple[str, ...]) -> None:
    """One small image, pushed once, under each tag (the registry lists tags; nobody pulls these)."""
    registry.use_credentials("pusher")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in registry.env().items():  # this registry's CA and credential helper
            patch.setenv(name, value)
        client = RegistryClient(registry.address, retries=1)
        config = b'{"architecture":"amd64","os":"linux"}'
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": oci.OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": client.upload_blob(repository, config), "size": len(config)},
            "layers": []}).encode()
        for tag in tags:
            client.put_manifest(repository, tag, manifest, oci.OCI_MANIFEST)
    registry.use_credentials("reader")


def _repo_copy(tmp_path: Path, variants: Path) -> Path:
    """What `pudev new-torch` reads and writes, copied (PUDEV_ROOT=copy), with `variants` as its matrix."""
    root = tmp_path / "repo"
    # What the generated tables read, besides: the benchmarks and the layering contracts.
    copy_paths(["docker", "requirements", "docs", "benchmarks", *(path.name for path in REPO_ROOT.glob("README*.md")),
                "CHANGELOG.md", "pyproject.toml"], REPO_ROOT, root)
    shutil.copy(variants, root / "docker/variants.toml")
    (root / ".venv").symlink_to(REPO_ROOT / ".venv")
    return root


def test_the_tag_list_follows_the_registrys_pages(registry: RealisticRegistry,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Docker Hub's pytorch/pytorch and nvidia/cuda hold thousands of tags: every page is read, as
    Distribution's Link header leads."""
    monkeypatch.setattr(registry_client, "TAGS_PAGE", 3)
    assert sorted(RegistryClient(registry.address, retries=1).list_tags("nvidia/cuda")) == sorted(NVIDIA)


def test_the_check_waits_for_the_official_images_then_says_ready(registry: RealisticRegistry,
                                                                 tmp_path: Path) -> None:
    """The workflow's check step, run as GitHub runs it: `waiting` while the index has the release but
    the registry has no official image of it (the summary says so, nothing is opened), then `ready`. On a
    registry of its own, which no other test has given the release's tags."""
    root = _repo_copy(tmp_path, BEFORE)
    with RealisticRegistry(tmp_path / "hub", helper_user="reader") as hub:
        _tag(hub, "pytorch/pytorch", OFFICIAL_BEFORE)
        _tag(hub, "nvidia/cuda", NVIDIA)
        waiting = _check_step(root, hub, tmp_path / "waiting")
        assert waiting["status"] == "waiting" and waiting["version"] == RELEASE
        assert all(word in waiting["summary"] for word in ("pytorch/pytorch", "2.15.0-cuda*-runtime")), waiting
        _tag(hub, "pytorch/pytorch", OFFICIAL_RELEASE)
        ready = _check_step(root, hub, tmp_path / "ready")
        assert ready["status"] == "ready" and ready["version"] == RELEASE
        assert ready["summary"].startswith("ready 2.15.0: moves cu132; adds cu130; keeps cu126 on 2.14.1")
    current = _check_step(_repo_copy(tmp_path / "today", VARIANTS_FILE), registry, tmp_path / "current")
    assert current["status"] == "current"


def _check_step(root: Path, registry: RealisticRegistry, scratch: Path) -> dict[str, str]:
    """Run the check job's `run` script with bash as the runner does; GITHUB_OUTPUT and the summary back."""
    workflow = YAML(typ="safe").load((REPO_ROOT / ".github/workflows/new-torch.yml").read_text())
    step = next(step for step in workflow["jobs"]["check"]["steps"] if step.get("id") == "check")
    scratch.mkdir(parents=True)
    output, summary = scratch / "output", scratch / "summary"
    env = {**os.environ, **registry.env(), "PUDEV_ROOT": str(root), "GITHUB_OUTPUT": str(output),
           "GITHUB_STEP_SUMMARY": str(summary), "VERSION": RELEASE, "NEW_TORCH_REGISTRY": registry.address}
    result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=root,
                            env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    found = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return {**found, "summary": summary.read_text()}


def test_the_dry_run_prints_the_diff_a_maintainer_reviews(registry: RealisticRegistry, tmp_path: Path) -> None:
    """The day-before matrix, the real index and the registry's tags give exactly the reviewed diff."""
    _tag(registry, "pytorch/pytorch", OFFICIAL_RELEASE)
    root = _repo_copy(tmp_path, BEFORE)
    result = run_pudev("new-torch", RELEASE, "--dry-run", "--registry", registry.address,
                       env={**registry.env(), "PUDEV_ROOT": str(root)}, timeout=300, check=True)
    diff = result.stdout.split("--- a/docker/variants.toml", 1)[1].split("\n--- a/", 1)[0]
    assert "--- a/docker/variants.toml" + diff + "\n" == (FIXTURES / "variants-2.15.0.diff").read_text()
    assert "+++ b/CHANGELOG.md" in result.stdout and "would lock requirements/lock/torch2.15.0-py3.12.txt" in \
        result.stdout
    assert (root / "docker/variants.toml").read_text() == BEFORE.read_text()  # a dry run writes nothing


def _rewound(text: str) -> str:
    """Today's file with the newest line (and what follows it) set back a release, to 2.14.9."""
    return re.sub(rf'(torch = "|pytorch/pytorch:|TORCH_VERSION = "|pytorch:|pytorch\."){re.escape(RELEASE)}',
                  r"\g<1>2.14.9", text)


@pytest.fixture
def on_release() -> None:
    newest = new_torch._newest_variant(VARIANTS_FILE.read_text())["torch"]
    if newest != RELEASE:
        pytest.skip(f"the newest line is on torch {newest}; these tests set it back from {RELEASE}")


@pytest.mark.usefixtures("on_release")
def test_a_rewound_matrix_moves_back_to_exactly_todays(registry: RealisticRegistry) -> None:
    """For any matrix: today's, its newest line set back a release, comes back to itself from the index's
    and the registry's answers (the daily workflow's path, without a file written)."""
    _tag(registry, "pytorch/pytorch", OFFICIAL_RELEASE)
    today, rewound = VARIANTS_FILE.read_text(), _rewound(VARIANTS_FILE.read_text())
    options = new_torch.Options(version=RELEASE, registry=registry.address)
    move = new_torch.decide(rewound, new_torch.ask(options, new_torch._newest_variant(rewound)))
    assert move.status == "ready" and move.text == today


@pytest.mark.usefixtures("on_release")
def test_one_command_moves_the_matrix_the_stand_ins_the_locks_and_the_changelog(registry: RealisticRegistry,
                                                                                tmp_path: Path) -> None:
    """The whole move in a copy of the repository set back a release: the matrix and the stand-ins come back
    to today's, every moved build is locked on each platform (the stand-in profiles' too), the lock no
    variant uses any more is removed, and the generated tables and the changelog are written."""
    _tag(registry, "pytorch/pytorch", OFFICIAL_RELEASE)
    root = _repo_copy(tmp_path, VARIANTS_FILE)
    for relative in ("docker/variants.toml", "docker/standins/standins.toml"):
        (root / relative).write_text(_rewound((REPO_ROOT / relative).read_text()))
    locks = root / "requirements/lock"
    for path in locks.glob(f"*{RELEASE}*.txt"):
        path.rename(path.with_name(path.name.replace(RELEASE, "2.14.9")))
    result = run_pudev("new-torch", RELEASE, "--without-base", "--registry", registry.address,
                       env={**registry.env(), "PUDEV_ROOT": str(root)}, timeout=900, check=True)
    for relative in ("docker/variants.toml", "docker/standins/standins.toml"):
        assert (root / relative).read_text() == (REPO_ROOT / relative).read_text(), relative
    for lock in (f"torch{RELEASE}-py3.12.txt", f"torch{RELEASE}-py3.12-arm64.txt", "standin-cu132.txt"):
        assert "--hash=sha256:" in (locks / lock).read_text() and f"wrote requirements/lock/{lock}" in result.stdout
    assert not list(locks.glob("*2.14.9*")), "a lock no variant uses stayed"
    changelog = (root / "CHANGELOG.md").read_text()
    assert f"2.14.9 → **{RELEASE}**" in changelog and f"<!-- changelog: cu132 torch {RELEASE} " in changelog
    assert (root / "README.md").read_text() == (REPO_ROOT / "README.md").read_text()  # its tables, as today's
