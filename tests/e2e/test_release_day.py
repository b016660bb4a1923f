"""Release day, rehearsed against a package index with real metadata semantics (package_index.py: PEP 691
pages with upload times, PEP 658 metadata) and a registry that behaves like Docker Hub (TLS, token auth,
redirected blobs, paged tag lists), in a copy of the checkout: `pudev new-torch` as the daily workflow
runs it, through the shapes a release takes. Each case checks the exact tree it leaves and runs the unit
suite on it, as the pull request's CI would. Releases are counted from today's matrix (its newest torch,
one minor on), so these hold after any move; the locks resolve the image's packages on the default index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomllib
from e2e_support import run_pudev
from package_index import IndexServer, PackageIndex
from realistic_registry import RealisticRegistry
from ruamel.yaml import YAML

from pudev.paths import REPO_ROOT, VARIANTS_FILE
from pudev.registry import client as registry_client
from pudev.registry import oci
from pudev.registry.client import RegistryClient

TODAY = tomllib.loads(VARIANTS_FILE.read_text())
NEWEST = max((str(t["torch"]) for t in TODAY["variants"].values()), key=lambda v: tuple(map(int, v.split("."))))
LINE = sorted((name for name, t in TODAY["variants"].items() if t["torch"] == NEWEST),
              key=lambda name: tuple(map(int, str(TODAY["variants"][name]["cuda"]).split("."))))
CUDAS = tuple(str(TODAY["variants"][name]["cuda"]) for name in LINE)
MAJOR, MINOR = NEWEST.split(".")[:2]
NEXT, PATCH = f"{MAJOR}.{int(MINOR) + 1}.0", f"{MAJOR}.{int(MINOR) + 1}.1"
NEW_CUDA = f"{CUDAS[-1].split('.')[0]}.{int(CUDAS[-1].split('.')[1]) + 4}"  # a CUDA no toolkit of ours has yet
NEW = "cu" + NEW_CUDA.replace(".", "")
NVIDIA = tuple(f"{version}.0-{flavour}-ubuntu24.04" for version in (*TODAY["toolkits"], *CUDAS)
               for flavour in ("devel", "cudnn-runtime"))


def _official(torch: str, cudas: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{torch}-cuda{cuda}-cudnn9-runtime" for cuda in cudas)


def _tag(registry: RealisticRegistry, repository: str, tags: tuple[str, ...]) -> None:
    """One small image under each tag (the registry lists tags; nobody pulls these)."""
    registry.use_credentials("pusher")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in registry.env().items():
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


class Day:
    """A checkout copy, the index and Docker Hub as they stand; `new_torch` runs the command on them."""

    def __init__(self, root: Path, index: PackageIndex, server: IndexServer, hub: RealisticRegistry) -> None:
        self.root, self.index, self.server, self.hub = root, index, server, hub

    def new_torch(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**self.hub.env(), "PUDEV_ROOT": str(self.root), "UV_INDEX": f"{self.server.url}/simple"}
        return run_pudev("new-torch", *args, "--registry", self.hub.address, "--torch-index",
                         f"{self.server.url}/whl", env=env, timeout=900)

    def move(self) -> tuple[str, dict[str, str]]:
        """`pudev new-torch --without-base` (the workflow's move); its output and what it changed."""
        before = self.snapshot()
        result = self.new_torch("--without-base")
        assert result.returncode == 0, result.stdout + result.stderr
        after = self.snapshot()
        changed = {name: "written" if name in after else "removed"
                   for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)}
        return result.stdout, changed

    def snapshot(self) -> dict[str, bytes]:
        return {str(p.relative_to(self.root)): p.read_bytes() for p in sorted(self.root.rglob("*"))
                if p.is_file() and ".venv" not in p.parts and "__pycache__" not in p.parts}

    def matrix(self) -> dict[str, Any]:
        return tomllib.loads((self.root / "docker/variants.toml").read_text())

    def unit_suite(self) -> str:
        """The pull request's unit suite, on the moved tree."""
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit"],
                                cwd=self.root, env={**os.environ, "PUDEV_ROOT": str(self.root)},
                                capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, result.stdout[-6000:]
        return result.stdout.strip().splitlines()[-1]


@pytest.fixture
def day(tmp_path: Path) -> Iterator[Day]:
    root = tmp_path / "repo"
    root.mkdir()
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):  # the checkout as a pull request's CI sees it
        if (REPO_ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, root / name)
    (root / ".venv").symlink_to(REPO_ROOT / ".venv")
    index = PackageIndex()
    index.release(NEWEST, default=CUDAS[-1], cudas=CUDAS, uploaded="2026-10-28T15:17:47Z", torchvision="0.29.2")
    with IndexServer(index) as server, RealisticRegistry(tmp_path / "hub", helper_user="reader") as hub:
        _tag(hub, "pytorch/pytorch", _official(NEWEST, CUDAS))
        _tag(hub, "nvidia/cuda", NVIDIA)
        yield Day(root, index, server, hub)


def test_images_pushed_one_at_a_time_then_a_patch_release(day: Day) -> None:
    """The ordinary release day: the index has every build at once, the official images arrive one by one
    over hours, the daily check runs between; then a patch release moves the whole line."""
    day.index.release(NEXT, default=CUDAS[-1], cudas=CUDAS, uploaded="2026-12-22T16:04:05Z", torchvision="0.31.0")
    check = day.new_torch("--check")
    assert check.returncode == 0 and check.stdout.startswith(f"waiting {NEXT}: waits for "), check.stdout
    for name, cuda in zip(LINE, CUDAS, strict=True):
        assert f"  {name}: waiting on torch {NEWEST}: pytorch/pytorch:{NEXT}-cuda{cuda}-cudnn*-runtime" in check.stdout
    assert day.move()[1] == {}  # waiting: nothing written
    locks = "requirements/lock/"
    for count in range(1, len(LINE) + 1):
        _tag(day.hub, "pytorch/pytorch", _official(NEXT, CUDAS[-count:]))
        out, changed = day.move()
        assert out.startswith(f"ready {NEXT}: moves {LINE[-count]}"), out
        moved = day.matrix()["variants"]
        assert [moved[name]["torch"] for name in LINE] == [NEWEST] * (len(LINE) - count) + [NEXT] * count
        plain = {name for name in changed if not name.startswith(locks)}
        assert {"docker/variants.toml", "CHANGELOG.md"} <= plain <= {
            "docker/variants.toml", "docker/standins/standins.toml", "CHANGELOG.md", "README.md", "README.zh-CN.md",
            *(name for name in changed if name.startswith("docs/"))}, changed
        assert changed.get(f"{locks}torch{NEXT}-py3.12.txt") in ("written", None)
        assert f"## 2026-12-22: `{LINE[-count]}`" in (day.root / "CHANGELOG.md").read_text()  # the upload day
    assert not list((day.root / locks).glob(f"torch{NEWEST}-*")), "a lock no variant uses stayed"
    again = day.new_torch("--check")
    assert again.stdout.startswith(f"current {NEXT}") and all(f"  {name}: current" in again.stdout for name in LINE)
    assert day.move()[1] == {}  # running twice changes nothing
    first = day.unit_suite()
    day.index.release(PATCH, default=CUDAS[-1], cudas=CUDAS, uploaded="2027-01-15T09:00:00Z", torchvision="0.31.1")
    _tag(day.hub, "pytorch/pytorch", _official(PATCH, CUDAS))
    out, changed = day.move()
    assert out.startswith(f"ready {PATCH}: moves {', '.join(LINE[::-1])}") or out.startswith(f"ready {PATCH}: moves")
    assert changed[f"{locks}torch{PATCH}-py3.12.txt"] == "written" and changed[f"{locks}torch{NEXT}-py3.12.txt"] \
        == "removed"
    standins = (day.root / "docker/standins/standins.toml").read_text()
    assert f'TORCH_VERSION = "{PATCH}"' in standins and 'TORCHVISION_VERSION = "0.31.1"' in standins
    print(f"unit suite after the staggered move: {first}; after the patch: {day.unit_suite()}")


def test_a_release_that_drops_a_cuda_and_brings_the_default_fails_midway_then_finishes(day: Day) -> None:
    """The release has no build for the line's oldest CUDA, brings a newer one that `pip install torch` gives,
    and NVIDIA's toolkit of it comes out the same day: the first run stops where NVIDIA's wheels are missing
    and leaves the tree as it was; the next run, once they are out, makes the whole move."""
    day.index.release(NEXT, default=NEW_CUDA, cudas=(*CUDAS[1:], NEW_CUDA), uploaded="2026-12-22T16:04:05Z",
                      torchvision="0.31.0")
    _tag(day.hub, "pytorch/pytorch", _official(NEXT, (*CUDAS[1:], NEW_CUDA)))
    _tag(day.hub, "nvidia/cuda", (f"{NEW_CUDA}.0-devel-ubuntu24.04", f"{NEW_CUDA}.0-cudnn-runtime-ubuntu24.04"))
    check = day.new_torch("--check")
    assert check.stdout.startswith(f"ready {NEXT}: moves {', '.join(LINE[1:])}, {NEW} (new); drops {LINE[0]}; "
                                   f"latest {TODAY['default_variant']} → {NEW}"), check.stdout
    before = day.snapshot()
    failed = day.new_torch("--without-base")
    error = failed.stderr.strip().splitlines()
    assert failed.returncode != 0 and len(error) == 1 and "Traceback" not in failed.stderr, failed.stderr
    assert "stand-ins step, the tree is unchanged" in error[0] and f"cuda-toolkit=={NEW_CUDA}.*" in error[0]
    assert "rerun once NVIDIA has published them" in error[0]  # not out yet, which is no network fault
    assert day.snapshot() == before
    day.index.toolkit(NEW_CUDA, toolkit=f"{NEW_CUDA}.0", jitlink=f"{NEW_CUDA}.20", uploaded="2026-12-22T10:00:00Z")
    _, changed = day.move()
    matrix = day.matrix()
    variants = matrix["variants"]
    assert variants[LINE[0]]["torch"] == NEWEST and variants[NEW]["torch"] == NEXT
    assert matrix["default_variant"] == NEW and NEW_CUDA in matrix["toolkits"]
    standins = tomllib.loads((day.root / "docker/standins/standins.toml").read_text())
    profile = next(table for table in standins["profiles"].values() if table["variant"] == NEW)
    assert NEW_CUDA in standins["toolkits"] and f"toolkit.{NEW_CUDA}.image" in profile
    compose = YAML(typ="safe").load((day.root / "docker-compose.yml").read_text())
    assert compose["x-dev"]["image"].endswith(f":{NEW}}}")
    assert {"docker-compose.yml", ".devcontainer/devcontainer.json", "docker/standins/standins.toml"} <= set(changed)
    print(f"unit suite on the moved tree: {day.unit_suite()}")


def test_the_tag_list_follows_the_registrys_pages(realistic_registry: RealisticRegistry,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Docker Hub's pytorch/pytorch and nvidia/cuda hold thousands of tags: every page is read, as
    Distribution's Link header leads."""
    _tag(realistic_registry, "nvidia/cuda", NVIDIA)
    for name, value in realistic_registry.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(registry_client, "TAGS_PAGE", 3)
    assert set(NVIDIA) <= set(RegistryClient(realistic_registry.address, retries=1).list_tags("nvidia/cuda"))


def test_the_workflow_check_step_reads_the_status_line(day: Day, tmp_path: Path) -> None:
    """The workflow's check step, run with bash as GitHub runs it: its outputs from the first line."""
    day.index.release(NEXT, default=CUDAS[-1], cudas=CUDAS, uploaded="2026-12-22T16:04:05Z", torchvision="0.31.0")
    workflow = YAML(typ="safe").load((REPO_ROOT / ".github/workflows/new-torch.yml").read_text())
    step = next(step for step in workflow["jobs"]["check"]["steps"] if step.get("id") == "check")
    output, summary = tmp_path / "output", tmp_path / "summary"
    env = {**os.environ, **day.hub.env(), "PUDEV_ROOT": str(day.root), "GITHUB_OUTPUT": str(output),
           "GITHUB_STEP_SUMMARY": str(summary), "VERSION": "", "NEW_TORCH_REGISTRY": day.hub.address,
           "NEW_TORCH_INDEX": f"{day.server.url}/whl", "UV_INDEX": f"{day.server.url}/simple"}
    result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=day.root,
                            env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    found = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert found == {"status": "waiting", "version": NEXT}
    assert all(f"{name}: waiting" in summary.read_text() for name in LINE)
