"""Fetch one pinned source distribution from the package index, checked against its sha256.

`pip download` of an sdist builds its metadata first, which for a CUDA extension means torch in
a build environment; this asks the index's simple API (PEP 691 JSON) for the file instead. The
index is pip's own default (or PIP_INDEX_URL): no host name lives in this repository."""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from pathlib import Path
from urllib.parse import urljoin

from pudev.common.errors import PudevError

SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


def index_url() -> str:
    configured = os.environ.get("PIP_INDEX_URL")
    if configured:
        return configured.rstrip("/") + "/"
    from pip._internal.models.index import PyPI  # pip's default index, whatever it is today

    return PyPI.simple_url.rstrip("/") + "/"


def fetch_sdist(name: str, version: str, sha256: str, folder: Path) -> Path:
    """folder/NAME-VERSION.tar.gz, downloaded once and checked against its pinned hash."""
    folder.mkdir(parents=True, exist_ok=True)
    for existing in folder.glob("*.tar.gz"):
        if hashlib.sha256(existing.read_bytes()).hexdigest() == sha256:
            return existing
    project = urljoin(index_url(), f"{name.lower().replace('_', '-')}/")
    try:
        request = urllib.request.Request(project, headers={"Accept": SIMPLE_JSON})
        with urllib.request.urlopen(request, timeout=60) as response:
            files = json.load(response)["files"]
    except (OSError, ValueError, KeyError) as error:
        raise PudevError(f"cannot list {name} on the package index ({error}); check the network or PIP_INDEX_URL") \
            from None
    wanted = [entry for entry in files if entry.get("hashes", {}).get("sha256") == sha256]
    if not wanted:
        raise PudevError(f"the package index has no file of {name} {version} with sha256 {sha256[:12]}...: "
                         "the pin in the benchmark is wrong or the release was withdrawn")
    target = folder / str(wanted[0]["filename"])
    try:
        with urllib.request.urlopen(urljoin(project, wanted[0]["url"]), timeout=300) as response:
            data = response.read()
    except OSError as error:
        raise PudevError(f"cannot download {target.name} ({error})") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise PudevError(f"{target.name} does not match its pinned sha256: not using it")
    target.write_bytes(data)
    return target
