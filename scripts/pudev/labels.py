"""OCI labels for a build, from the variant and the git checkout.

`created` is the commit time, not the wall clock, so rebuilding the same source
gives the same image id (and its recorded test pass stays valid).
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass

from pudev import engine
from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.matrix import Variant
from pudev.paths import REPO_ROOT

OCI = "org.opencontainers.image"
PUDEV = "org.pudev"


@dataclass(frozen=True)
class SourceInfo:
    revision: str  # full commit id, "-dirty" appended when the tree has changes
    created: str  # RFC 3339 commit time
    url: str


def _git(*args: str) -> str:
    result = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    return result.stdout.strip() if result.returncode == 0 else ""


def source_info() -> SourceInfo:
    revision = _git("rev-parse", "HEAD") or "unknown"
    if revision != "unknown" and _git("status", "--porcelain", "--untracked-files=no"):
        revision += "-dirty"
    # SOURCE_DATE_EPOCH (reproducible-builds convention) wins; a checkout without commits uses today.
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    created = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch))) if epoch.isdigit()
               else _git("log", "-1", "--format=%cI") or time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime()))
    url = os.environ.get("PUDEV_SOURCE_URL") or _https(_git("remote", "get-url", "origin"))
    return SourceInfo(revision=revision, created=created, url=url)


def _https(remote: str) -> str:
    """git@github.com:o/r.git -> https://github.com/o/r"""
    if remote.startswith("git@"):
        host, _, path = remote[4:].partition(":")
        remote = f"https://{host}/{path}"
    return remote.removesuffix(".git")


def base_identity(base_image: str) -> tuple[str, str]:
    """(manifest digest, local image id) of the base. The digest comes from a pinned
    reference or the local copy's registry digest; stand-ins have only an id."""
    ref = parse_image_ref(base_image)
    try:
        info = engine.inspect_image(base_image) or {}
    except PudevError:
        info = {}  # no engine (e.g. `pudev plan` on a laptop): labels without the base's ids
    image_id = str(info.get("Id", ""))
    if ref is not None and ref.digest:
        return ref.digest, image_id
    for repo_digest in info.get("RepoDigests") or []:
        return str(repo_digest).split("@", 1)[1], image_id
    return "", image_id


def build_labels(variant: Variant, source: SourceInfo, base: tuple[str, str]) -> dict[str, str]:
    labels = {
        f"{OCI}.title": f"PyTorch Universal Dev ({variant.name})",
        f"{OCI}.description": (f"PyTorch {variant.torch} (CUDA {variant.cuda}) with CUDA toolkits "
                               f"{' + '.join(variant.toolkit_versions)}, JupyterLab and zsh"),
        f"{OCI}.version": f"{variant.torch}-{variant.name}",
        f"{OCI}.revision": source.revision,
        f"{OCI}.created": source.created,
        f"{OCI}.licenses": "MIT",
        f"{OCI}.base.name": variant.base_image,
        f"{PUDEV}.variant": variant.name,
        f"{PUDEV}.torch": variant.torch,
        f"{PUDEV}.cuda": variant.cuda,
        f"{PUDEV}.toolkits": ",".join(f"{t.version}={t.image}" for t in variant.toolkits),
        f"{PUDEV}.default-toolkit": variant.default_toolkit,
        f"{PUDEV}.python": variant.python,
        f"{PUDEV}.mirror": variant.mirror,
    }
    if source.url:
        labels[f"{OCI}.source"] = source.url
    digest, image_id = base
    if digest:
        labels[f"{OCI}.base.digest"] = digest
    if image_id:
        labels[f"{PUDEV}.base.id"] = image_id
    return labels
