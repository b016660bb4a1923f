"""The revision an image records is the build context's last commit: a commit elsewhere leaves the
image id (and its registry layers and recorded test passes) as they were; one inside changes it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from dockerfiles import instructions

from pudev.building import labels
from pudev.paths import REPO_ROOT


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def _commit(root: Path, relative: str, text: str) -> str:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    _git(root, "add", relative)
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", relative)
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _git(tmp_path, "init", "-q")
    monkeypatch.setattr(labels, "REPO_ROOT", tmp_path)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    _commit(tmp_path, ".dockerignore", "*\n!docker/\n!scripts/pudev/\n**/__pycache__\n")
    return tmp_path


def test_the_context_is_the_dockerignore_allowlist(checkout: Path) -> None:
    assert labels.context_paths() == ["docker/", "scripts/pudev/"]


def test_a_commit_outside_the_context_keeps_the_revision(checkout: Path) -> None:
    inside = _commit(checkout, "docker/Dockerfile", "FROM scratch\n")
    created = labels.source_info().created
    _commit(checkout, "README.md", "docs\n")
    _commit(checkout, "tests/e2e/test_x.py", "x = 1\n")
    assert labels.source_info().revision == inside and labels.source_info().created == created
    (checkout / "README.md").write_text("an edit outside the context\n")
    assert labels.source_info().revision == inside


def test_a_change_inside_the_context_moves_or_dirties_the_revision(checkout: Path) -> None:
    _commit(checkout, "docker/Dockerfile", "FROM scratch\n")
    later = _commit(checkout, "scripts/pudev/tool.py", "x = 1\n")
    assert labels.source_info().revision == later
    (checkout / "scripts/pudev/new.py").write_text("y = 2\n")  # untracked, yet sent with the context
    assert labels.source_info().revision == f"{later}-dirty"


def _read_by_dockerfiles() -> set[str]:
    """Every path of the build context a Dockerfile under docker/ reads: COPY sources and bind-mount
    sources that do not come from another stage (an ARG in a path stands for any name there)."""
    read: set[str] = set()
    for dockerfile in sorted((REPO_ROOT / "docker").rglob("*Dockerfile")):
        for line in instructions(dockerfile):
            words = line.split()
            if words[:1] == ["COPY"] and not any(word.startswith("--from=") for word in words):
                read.update(word for word in words[1:-1] if not word.startswith("--"))
            for mount in re.findall(r"--mount=(\S+)", line):
                options = dict(option.partition("=")[::2] for option in mount.split(","))
                if options.get("type") == "bind" and "from" not in options and "source" in options:
                    read.add(options["source"])
    return {path.split("$")[0] for path in read}


def _within(path: str, entry: str) -> bool:
    return path == entry.rstrip("/") or path.startswith(entry if entry.endswith("/") else entry + "/")


def test_the_allowlist_is_what_the_dockerfiles_read_no_more() -> None:
    """The real .dockerignore: everything a Dockerfile reads is in the context, and every entry is read, so
    an edit to pudev's host side (its CLI, planner, benchmarks) leaves each image id and its test passes."""
    read, allowed = _read_by_dockerfiles(), labels.context_paths()
    assert read, "no Dockerfile source found: the parser is out of step with docker/"
    # A folder a Dockerfile reads whole (COPY scripts/pudev) holds what the allowlist lets in of it.
    assert not [path for path in read if not any(_within(path, entry) or _within(entry, path) for entry in allowed)]
    assert not [entry for entry in allowed if not any(_within(path, entry) or _within(entry, path) for path in read)]
    # pudev's own code, where most commits land: only the image's part (what runs inside it and the build
    # steps mount) is in the context, whatever path of it a Dockerfile names.
    image_side = {"scripts/pudev/__init__.py", "scripts/pudev/common", "scripts/pudev/mirror", "scripts/pudev/image"}
    assert {entry.rstrip("/") for entry in allowed if entry.startswith("scripts/")} == image_side
