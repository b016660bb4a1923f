"""OCI labels for a build, from the variant and the git checkout.

The revision is the last commit that changed the build context (the allowlist
in .dockerignore), not HEAD: a commit to docs or host-side tests leaves every
image byte, and so the image id, its registry layers and its recorded test
passes, as they were. `created` is that commit's time, not the wall clock, for
the same reason. Labels hold only what may be published: the source is a
repository URL or absent, never a local path.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pudev.common.variant import PUDEV_LABELS, as_text, travelling_values
from pudev.config.model import Variant
from pudev.paths import REPO_ROOT

OCI = "org.opencontainers.image"
PUDEV = PUDEV_LABELS
_SCP_REMOTE = re.compile(r"^[\w.-]+@(?P<host>[\w.-]+):(?P<path>[\w./-]+)$")
_URL = re.compile(r"^https?://[\w.-]+(:\d+)?/[\w./-]+$")


@dataclass(frozen=True)
class SourceInfo:
    revision: str  # the build context's last commit, "-dirty" appended when the context has changes
    created: str  # RFC 3339 commit time
    url: str  # https://host/owner/repo, or "" when the checkout has no public remote


def _git(*args: str) -> str:
    """git's answer, or "" where there is no git or no checkout (labels then say less)."""
    try:
        result = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    except OSError:
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def context_paths() -> list[str]:
    """What the build context holds: .dockerignore's `!PATH` lines (it ignores everything else)."""
    dockerignore = REPO_ROOT / ".dockerignore"
    lines = dockerignore.read_text(encoding="utf-8").splitlines() if dockerignore.is_file() else []
    paths = [line.strip()[1:] for line in lines if line.strip().startswith("!")]
    return paths or ["."]  # no allowlist: the whole checkout is the context


def copy_paths(relatives: Iterable[str], source: Path, target: Path) -> None:
    """Files and folders under `source` copied to the same places under `target` (no __pycache__)."""
    for relative in relatives:
        if (source / relative).is_dir():
            shutil.copytree(source / relative, target / relative, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / relative, target / relative)


def copy_context(target: Path) -> Path:
    """The build context (.dockerignore and what it allows) copied to `target`, to build an edited copy
    (PUDEV_ROOT=target) without touching the checkout; `target`."""
    copy_paths([*context_paths(), ".dockerignore"], REPO_ROOT, target)
    return target


def source_info() -> SourceInfo:
    paths = ["--", *context_paths()]
    revision = _git("log", "-1", "--format=%H", *paths) or "unknown"
    # Untracked files count: the context sends them too (ignored ones are in neither).
    if revision != "unknown" and _git("status", "--porcelain", *paths):
        revision += "-dirty"
    # SOURCE_DATE_EPOCH (reproducible-builds convention) wins; a checkout without commits uses today.
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    created = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch))) if epoch.isdigit()
               else _git("log", "-1", "--format=%cI", *paths) or time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime()))
    url = public_url(os.environ.get("PUDEV_SOURCE_URL") or _git("remote", "get-url", "origin"))
    return SourceInfo(revision=revision, created=created, url=url)


def public_url(remote: str) -> str:
    """git@github.com:o/r.git -> https://github.com/o/r; a path, file:// or anything else -> ""."""
    remote = remote.strip()
    scp = _SCP_REMOTE.match(remote)
    if scp:
        remote = f"https://{scp['host']}/{scp['path']}"
    remote = re.sub(r"^(https?://)[^/@]+@", r"\1", remote)  # never publish credentials in a URL
    remote = remote.removesuffix(".git")
    return remote if _URL.match(remote) else ""


def build_labels(variant: Variant, source: SourceInfo) -> dict[str, str]:
    """The OCI description of the image and the source, then each variant field's label as declared
    with the field (pudev.common.variant); the toolkit slots are one label, version=image each."""
    labels = {
        f"{OCI}.title": f"PyTorch Universal Dev ({variant.name})",
        f"{OCI}.description": (f"PyTorch {variant.torch} (CUDA {variant.cuda}) with CUDA toolkits "
                               f"{' + '.join(variant.toolkit_versions)}, JupyterLab and zsh"),
        f"{OCI}.version": f"{variant.torch}-{variant.name}",
        f"{OCI}.revision": source.revision,
        f"{OCI}.created": source.created,
        f"{OCI}.licenses": "MIT",
        **{contract.label_key: as_text(value) for _, contract, value in travelling_values(variant) if contract.label},
        f"{PUDEV}.toolkits": ",".join(f"{t.version}={t.image}" for t in variant.toolkits),
    }
    if source.url:
        labels[f"{OCI}.source"] = source.url
    return labels


def base_labels(digest: str, image_id: str) -> dict[str, str]:
    """What only the engine knows at build time: the base's manifest digest and local id."""
    labels = {}
    if digest:
        labels[f"{OCI}.base.digest"] = digest
    if image_id:
        labels[f"{PUDEV}.base.id"] = image_id
    return labels
