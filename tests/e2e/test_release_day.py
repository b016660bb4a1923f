"""Release day, rehearsed against a package index with real metadata semantics (package_index.py: PEP 691
pages with upload times, PEP 658 metadata) and a registry that behaves like Docker Hub (TLS, token auth,
redirected blobs, paged tag lists), in a copy of the checkout: `pudev new-torch` as the daily workflow
runs it, through the shapes a release takes (a partial move among them), and through an apply that fails
or is killed midway. Each case checks the exact tree it leaves (`git status` of the copy, and its bytes)
and runs `make check` (the lint gates and the unit suite) on it, as the pull request's CI would. Releases
are counted from today's matrix (its newest torch, one minor on), whatever its shape, so these hold after
any move; the locks resolve the image's packages on the default index."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tomllib
from e2e_support import run_pudev
from package_index import IndexServer, PackageIndex
from realistic_registry import RealisticRegistry
from ruamel.yaml import YAML

from pudev.devtools.new_torch.transaction import JOURNAL
from pudev.paths import REPO_ROOT, STANDINS_FILE, VARIANTS_FILE
from pudev.registry import client as registry_client
from pudev.registry import oci
from pudev.registry.client import RegistryClient

TODAY = tomllib.loads(VARIANTS_FILE.read_text())
NEWEST = max((str(t["torch"]) for t in TODAY["variants"].values()), key=lambda v: tuple(map(int, v.split("."))))
# The variants on the newest torch, one or several (on release day one may have moved while others wait).
LINE = sorted((name for name, t in TODAY["variants"].items() if t["torch"] == NEWEST),
              key=lambda name: tuple(map(int, str(TODAY["variants"][name]["cuda"]).split("."))))
CUDAS = tuple(str(TODAY["variants"][name]["cuda"]) for name in LINE)
# What `pip install torch` gives: latest's CUDA, so `latest` stays where it is unless a case moves it.
DEFAULT_CUDA = str(TODAY["variants"][TODAY["default_variant"]]["cuda"])
MAJOR, MINOR = NEWEST.split(".")[:2]
NEXT, PATCH = f"{MAJOR}.{int(MINOR) + 1}.0", f"{MAJOR}.{int(MINOR) + 1}.1"
# A CUDA that no variant, toolkit or stand-in recipe of ours has yet.
_KNOWN = [*TODAY["toolkits"], *(str(t["cuda"]) for t in TODAY["variants"].values()),
          *tomllib.loads(STANDINS_FILE.read_text()).get("toolkits", {})]
_CUDA_MAJOR = CUDAS[-1].split(".")[0]
NEW_CUDA = f"{_CUDA_MAJOR}.{max(int(v.split('.')[1]) for v in _KNOWN if v.split('.')[0] == _CUDA_MAJOR) + 1}"
NEW = "cu" + NEW_CUDA.replace(".", "")
NVIDIA = tuple(f"{version}.0-{flavour}-ubuntu24.04" for version in (*TODAY["toolkits"], *CUDAS)
               for flavour in ("devel", "cudnn-runtime"))
# `pudev new-torch ARGS` killed with SIGKILL in the apply: at the rename that writes the journal ("journal"),
# or at the staged rename after N others (N). The rest of the command is the real one.
KILLER = """
import os, signal, sys
from pudev.devtools.new_torch.transaction import JOURNAL
replace, at, renamed = os.replace, sys.argv.pop(1), []
def killing(source, target, **options):
    journal, staged = str(target).endswith(JOURNAL), str(source).endswith(".new-torch")
    if (at == "journal" and journal) or (at != "journal" and staged and len(renamed) == int(at)):
        os.kill(os.getpid(), signal.SIGKILL)
    renamed.extend([source] if staged else [])
    return replace(source, target, **options)
os.replace = killing
from pudev.cli import main
sys.exit(main(sys.argv[1:]))
"""


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
    """A checkout copy (a git repository, its history one commit: the tree as the day starts), the index and
    Docker Hub as they stand; `new_torch` runs the command on them."""

    def __init__(self, root: Path, index: PackageIndex, server: IndexServer, hub: RealisticRegistry) -> None:
        self.root, self.index, self.server, self.hub = root, index, server, hub

    def new_torch(self, *args: str, kill: str = "") -> subprocess.CompletedProcess[str]:
        """`pudev new-torch ARGS`; `kill`: SIGKILL in the apply (KILLER says where)."""
        env = {**self.hub.env(), "PUDEV_ROOT": str(self.root), "UV_INDEX": f"{self.server.url}/simple"}
        where = ("--registry", self.hub.address, "--torch-index", f"{self.server.url}/whl")
        if not kill:
            return run_pudev("new-torch", *args, *where, env=env, timeout=900)
        return subprocess.run([sys.executable, "-c", KILLER, kill, "new-torch", *args, *where], cwd=REPO_ROOT,
                              env={**os.environ, **env}, capture_output=True, text=True, timeout=900, check=False)

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
                if p.is_file() and ".venv" not in p.parts and "__pycache__" not in p.parts
                and p != self.root / ".git"}

    def status(self) -> list[str]:
        """`git status --short`, every untracked file named: [] while the tree is as the day started."""
        return subprocess.run(["git", "status", "--short", "--untracked-files=all"], cwd=self.root, check=True,
                              capture_output=True, text=True).stdout.splitlines()

    def matrix(self) -> dict[str, Any]:
        return tomllib.loads((self.root / "docker/variants.toml").read_text())

    def check(self) -> str:
        """`make check` (the lint gates and the unit suite), as the pull request's CI runs it, on the tree; its
        caches kept out of the tree."""
        caches = self.root.parent / "caches"
        env = {**os.environ, "PUDEV_ROOT": str(self.root), "MYPY_CACHE_DIR": str(caches / "mypy"),
               "RUFF_CACHE_DIR": str(caches / "ruff"), "PYTHONDONTWRITEBYTECODE": "1"}
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/lint",
                                 "tests/unit"], cwd=self.root, env=env, capture_output=True, text=True, timeout=900,
                                check=False)
        assert result.returncode == 0, result.stdout[-6000:]
        return result.stdout.strip().splitlines()[-1]


@contextmanager
def _opened(folder: Path, root: Path | None = None) -> Iterator[Day]:
    """A Day in `folder` (its checkout copy at `root`, else folder/repo): the index has today's newest torch and
    Docker Hub its official images."""
    root = root or folder / "repo"
    root.mkdir()
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):  # the checkout as a pull request's CI sees it
        if (REPO_ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, root / name)
    (root / ".venv").symlink_to(REPO_ROOT / ".venv")
    git = ["git", "-c", "user.name=rehearsal", "-c", "user.email=rehearsal@example.invalid", "-c",
           "commit.gpgsign=false"]
    for command in (["init", "-q", f"--separate-git-dir={folder / 'git'}", "."], ["add", "-A"],
                    ["commit", "-q", "--no-verify", "-m", "the tree as the day starts"]):
        subprocess.run([*git, *command], cwd=root, check=True, capture_output=True, timeout=120)
    index = PackageIndex()
    index.release(NEWEST, default=DEFAULT_CUDA, cudas=CUDAS, uploaded="2026-10-28T15:17:47Z", torchvision="0.29.2")
    with IndexServer(index) as server, RealisticRegistry(folder / "hub", helper_user="reader") as hub:
        _tag(hub, "pytorch/pytorch", _official(NEWEST, CUDAS))
        _tag(hub, "nvidia/cuda", NVIDIA)
        yield Day(root, index, server, hub)


@pytest.fixture
def day(tmp_path: Path) -> Iterator[Day]:
    with _opened(tmp_path) as opened:
        yield opened


def _everything_out(day: Day) -> None:
    """torch NEXT on the index for every CUDA of the line, and every official image of it pushed."""
    day.index.release(NEXT, default=DEFAULT_CUDA, cudas=CUDAS, uploaded="2026-12-22T16:04:05Z", torchvision="0.31.0")
    _tag(day.hub, "pytorch/pytorch", _official(NEXT, CUDAS))


@dataclass(frozen=True)
class Whole:
    """The whole move to NEXT, made once in a copy of its own: what an interrupted apply must end as."""

    before: dict[str, bytes]
    after: dict[str, bytes]
    status: list[str]


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Whole:
    with _opened(tmp_path_factory.mktemp("whole")) as day:
        _everything_out(day)
        before = day.snapshot()
        day.move()
        moved = Whole(before, day.snapshot(), day.status())
    assert moved.status, "the move changed nothing"
    return moved


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The run's one line on stderr, never a traceback."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_images_pushed_one_at_a_time_then_a_patch_release(day: Day) -> None:
    """The ordinary release day: the index has every build at once, the official images arrive one by one
    over hours, the daily check runs between; then a patch release moves the whole line. make check runs once,
    after the patch: the tree of the whole move to NEXT is checked by the SIGKILL case below, which ends byte
    for byte as the whole move (one make check is about a minute on a busy 2-core machine)."""
    day.index.release(NEXT, default=DEFAULT_CUDA, cudas=CUDAS, uploaded="2026-12-22T16:04:05Z",
                      torchvision="0.31.0")
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
    day.index.release(PATCH, default=DEFAULT_CUDA, cudas=CUDAS,
                      uploaded="2027-01-15T09:00:00Z", torchvision="0.31.1")
    _tag(day.hub, "pytorch/pytorch", _official(PATCH, CUDAS))
    out, changed = day.move()
    assert out.startswith(f"ready {PATCH}: moves {', '.join(LINE[::-1])}") or out.startswith(f"ready {PATCH}: moves")
    assert changed[f"{locks}torch{PATCH}-py3.12.txt"] == "written" and changed[f"{locks}torch{NEXT}-py3.12.txt"] \
        == "removed"
    standins = (day.root / "docker/standins/standins.toml").read_text()
    assert f'TORCH_VERSION = "{PATCH}"' in standins and 'TORCHVISION_VERSION = "0.31.1"' in standins
    print(f"make check after the patch: {day.check()}")


def test_a_release_that_drops_a_cuda_and_brings_the_default_fails_midway_then_finishes(day: Day) -> None:
    """The release has no build for the line's oldest CUDA, brings a newer one that `pip install torch` gives,
    and NVIDIA's toolkit of it comes out the same day: the first run stops where NVIDIA's wheels are missing
    and leaves the tree as it was; the next run, once they are out, makes the whole move. 122 s measured (make
    check 85 s of it) on a busy 2-core machine."""
    day.index.release(NEXT, default=NEW_CUDA, cudas=(*CUDAS[1:], NEW_CUDA), uploaded="2026-12-22T16:04:05Z",
                      torchvision="0.31.0")
    _tag(day.hub, "pytorch/pytorch", _official(NEXT, (*CUDAS[1:], NEW_CUDA)))
    _tag(day.hub, "nvidia/cuda", (f"{NEW_CUDA}.0-devel-ubuntu24.04", f"{NEW_CUDA}.0-cudnn-runtime-ubuntu24.04"))
    check = day.new_torch("--check")
    assert check.stdout.startswith(f"ready {NEXT}: moves {', '.join([*LINE[1:], f'{NEW} (new)'])}; drops {LINE[0]}; "
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
    print(f"make check on the moved tree: {day.check()}")


def test_a_partial_move_one_variant_on_the_release_one_waiting_passes_make_check(day: Day) -> None:
    """Release day as it usually goes: only the newest CUDA's official image is out, so that variant moves and
    the rest of the line waits. A line of one waits with the CUDA the release brings: `pip install torch` gives
    it, so it is a variant of the line, waiting for its image (and latest with it). The pull request this tree
    becomes must be green. 124 s measured (make check 94 s of it) on a busy 2-core machine."""
    cudas, default, waiting = (CUDAS, DEFAULT_CUDA, [*LINE[:-1]]) if len(CUDAS) > 1 else \
        ((*CUDAS, NEW_CUDA), NEW_CUDA, [NEW])
    day.index.release(NEXT, default=default, cudas=cudas, uploaded="2026-12-22T16:04:05Z", torchvision="0.31.0")
    _tag(day.hub, "pytorch/pytorch", _official(NEXT, CUDAS[-1:]))
    out, changed = day.move()
    first = out.splitlines()[0]
    assert first.startswith(f"ready {NEXT}: moves {LINE[-1]}; waits for ") and all(n in first for n in waiting), out
    variants = day.matrix()["variants"]
    assert variants[LINE[-1]]["torch"] == NEXT and all(variants[name]["torch"] == NEWEST for name in LINE[:-1])
    assert NEW not in variants or len(CUDAS) > 1
    again = day.new_torch("--check").stdout.splitlines()[0]
    assert again.startswith(f"waiting {NEXT}: waits for ") and all(name in again for name in waiting), again
    status = day.status()
    assert sorted(line[3:] for line in status) == sorted(changed), status
    print(f"partial move: git status --short has {len(status)} lines; make check: {day.check()}")


def _immutable(path: Path, on: bool) -> None:
    """chattr +i / -i: a file or folder nothing may change, root included; skips where the filesystem or the
    user cannot set it."""
    result = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True, text=True, check=False)
    if result.returncode != 0 or shutil.which("chattr") is None:
        pytest.skip(f"chattr {'+' if on else '-'}i {path.name} failed ({result.stderr.strip()}): setting the "
                    "immutable attribute needs root and a filesystem with attributes (ext4, xfs, btrfs)")


def test_a_file_or_folder_that_cannot_be_written_stops_the_apply_then_the_rerun_moves_whole(
        day: Day, whole: Whole) -> None:
    """One of the move's files made immutable (chattr +i), then its folder: each run stops in one line naming
    it and the fix, the tree exactly as it was (no staged file left); once writable, the rerun makes the whole
    move, byte for byte. 82 s measured (three moves), plus 26 s once for `whole`, on a busy 2-core machine."""
    _everything_out(day)
    assert day.snapshot() == whole.before
    target = next((line[3:] for line in whole.status if line.startswith(" M docs/")),
                  next(line[3:] for line in whole.status if line.startswith(" M ")))
    folder = str(Path(target).parent)
    for locked in (target, folder):
        _immutable(day.root / locked, True)
        try:
            failed = day.new_torch("--without-base")
        finally:
            _immutable(day.root / locked, False)
        line = _one_line(failed)
        assert failed.returncode != 0 and locked in line and "chattr -i" in line and "unchanged" in line, line
        assert day.status() == [] and day.snapshot() == whole.before
        print(f"{'file' if locked == target else 'folder'} {locked} immutable: {line}; git status: 0 lines")
    out, _ = day.move()
    assert day.snapshot() == whole.after and day.status() == whole.status, out
    print(f"rerun: git status --short has {len(day.status())} lines, the whole move's")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs: room for the checkout copy, and a disk the test can fill."""
    mount = tmp_path / "disk"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "pudev-rehearsal", str(mount)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill ({mounted.stderr.strip()}): needs root with CAP_SYS_ADMIN")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True, check=False)


def test_a_full_disk_stops_the_apply_then_the_rerun_moves_whole(small_disk: Path, tmp_path: Path,
                                                                 whole: Whole) -> None:
    """The checkout on a disk filled to the last byte: the run stops in one line naming a file and the fix
    (free space), the tree as it was; with space again, the rerun makes the whole move. 59 s measured (two
    moves) on a busy 2-core machine; skips where no tmpfs can be mounted (root with CAP_SYS_ADMIN)."""
    with _opened(tmp_path, small_disk / "repo") as day:
        _everything_out(day)
        balloon = small_disk / "balloon"
        with balloon.open("wb", buffering=0) as out:  # unbuffered: the last short write leaves nothing to flush
            try:
                while True:
                    out.write(b"\0" * (1 << 20))
            except OSError as error:
                assert error.errno == errno.ENOSPC
        failed = day.new_torch("--without-base")
        line = _one_line(failed)
        assert failed.returncode != 0 and "free space" in line and "unchanged" in line, line
        assert day.status() == [] and day.snapshot() == whole.before
        balloon.unlink()
        day.move()
        assert day.snapshot() == whole.after and day.status() == whole.status
        print(f"full disk: {line}; git status: 0 lines; rerun: {len(day.status())} lines, the whole move's")


@pytest.mark.parametrize("kill", ["journal", "1"], ids=["before-the-journal", "after-one-rename"])
def test_sigkill_during_the_apply_then_the_rerun_ends_fully_moved(day: Day, whole: Whole, kill: str) -> None:
    """SIGKILL in the apply: at the journal's rename (the tree unchanged, staged files left), or after the first
    file was renamed into place (half the tree moved, the journal left). The rerun says so in one line and
    ends with the whole move, byte for byte; `--check` never says `current` on the half-moved tree, it
    finishes it first. After the half-moved one, make check on the tree. Measured on a busy 2-core machine:
    51 s before the journal (two moves), 113 s after a rename (a move, a check, make check 82 s)."""
    _everything_out(day)
    killed = day.new_torch("--without-base", kill=kill)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    status = day.status()
    if kill == "journal":
        assert status and all(line.startswith("?? ") and line.endswith(".new-torch") for line in status), status
        rerun = day.new_torch("--without-base")
        assert rerun.returncode == 0 and "staged but never applied" in _one_line(rerun), rerun.stderr
    else:
        assert (day.root / JOURNAL).exists() and status and status != whole.status, status
        rerun = day.new_torch("--check")
        assert rerun.returncode == 0 and "finished" in _one_line(rerun) and JOURNAL in rerun.stderr, rerun.stderr
        assert rerun.stdout.startswith(f"current {NEXT}"), rerun.stdout
    assert day.snapshot() == whole.after and day.status() == whole.status
    print(f"killed {kill}: git status had {len(status)} lines; rerun: {_one_line(rerun)}; git status: "
          f"{len(day.status())} lines, the whole move's" + (f"; make check: {day.check()}" if kill != "journal"
                                                             else ""))


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
    day.index.release(NEXT, default=DEFAULT_CUDA, cudas=CUDAS, uploaded="2026-12-22T16:04:05Z",
                      torchvision="0.31.0")
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
