"""Switch apt, pip, uv and conda between mirrors (and the Hugging Face endpoint), and report which
is active.

apt is rewritten from the base image's originals (saved at build time), so any
switch, and `none` in particular, starts from what the base shipped.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.mirror import models
from pudev.mirror.apt import rewrite, uses_host
from pudev.mirror.catalogue import MIRRORS, NO_MIRROR, Mirror
from pudev.mirror.config import RENDERERS, index_host, written_by_pudev
from pudev.mirror.mirror_files import MirrorFiles


def lookup(name: str) -> Mirror | None:
    if name == NO_MIRROR:
        return None
    if name not in MIRRORS:
        raise PudevError(f"unknown mirror '{name}': choose one of {', '.join([*MIRRORS, NO_MIRROR])}")
    return MIRRORS[name]


def save_originals(files: MirrorFiles) -> None:
    """Keep the base image's apt sources once; later saves never overwrite them."""
    for path in files.apt_files():
        saved = files.originals / path.relative_to(files.root)
        if not saved.exists():
            saved.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, saved)


def rendered_apt(files: MirrorFiles, mirror: Mirror | None) -> dict[Path, str]:
    """Relative path -> content of every apt sources file for `mirror` (None: originals)."""
    if not files.originals.is_dir():
        raise PudevError(f"{files.originals} is missing: this image kept no copy of its apt sources")
    result: dict[Path, str] = {}
    for saved in sorted(p for p in files.originals.rglob("*") if p.is_file()):
        relative = saved.relative_to(files.originals)
        text = saved.read_text()
        if mirror is not None:
            text = rewrite(saved, text, mirror, https=files.https_ok)
        result[relative] = text
    return result


def write_apt(files: MirrorFiles, mirror: Mirror | None) -> None:
    if not os.access(files.apt_list.parent, os.W_OK):
        raise PudevError("apt sources need root: run `docker exec -u root CONTAINER pudev mirror NAME`")
    for relative, text in rendered_apt(files, mirror).items():
        (files.root / relative).write_text(text)


def write_tool_files(files: MirrorFiles, mirror: Mirror | None, *, system: bool) -> list[str]:
    """pip's, uv's and (where conda exists) conda's settings: the system-wide files (root, for
    every user) or this user's own. Files pudev did not write are left alone. Returns notes."""
    notes = []
    for tool in files.tools():
        path = files.system_file(tool) if system else files.user_file(tool)
        if path.exists() and not written_by_pudev(path.read_text()):
            notes.append(f"left {path} alone: pudev did not write it (move it away to let pudev manage it)")
        elif mirror is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(RENDERERS[tool](mirror))
            path.chmod(0o644)  # readable by every user id, whatever the umask
    return notes


def write_models(files: MirrorFiles, name: str, *, system: bool) -> None:
    """The Hugging Face endpoint for every user (root) or this user alone. A user's own `none` is a
    file too, since theirs wins over the image-wide one; a `none` that changes nothing leaves none."""
    path = files.models_file(system=system)
    if name == models.NO_HF_MIRROR and (system or not files.models_file(system=True).exists()):
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(models.render(name))
    path.chmod(0o644)


def active(files: MirrorFiles) -> dict[str, str]:
    """Which mirror each tool uses: a mirror name, `none` (base settings) or `custom`.
    A user's own file wins over the system-wide one, as it does for the tools."""
    state = {"apt": _apt_state(files)}
    for tool in files.tools():
        state[tool] = _file_state(files.user_file(tool), tool) or system_state(files, tool)
    return state


def format_state(state: dict[str, str]) -> str:
    """`apt: aliyun  pip: aliyun  ...`, as `pudev mirror --show` and `pudev verify` print it."""
    return "  ".join(f"{tool}: {name}" for tool, name in state.items())


def system_state(files: MirrorFiles, tool: str) -> str:
    """What every user of this image gets for `tool` when their home does not say otherwise."""
    return _file_state(files.system_file(tool), tool) or NO_MIRROR


def _file_state(path: Path, tool: str) -> str | None:
    if not path.exists():
        return None
    text = path.read_text()
    for mirror in MIRRORS.values():
        found = mirror.conda_base in text if tool == "conda" else index_host(text) == _host(mirror.pypi_index)
        if found:
            return mirror.name
    return "custom"


def _host(url: str) -> str:
    return url.split("://", 1)[1].split("/", 1)[0]


def _apt_state(files: MirrorFiles) -> str:
    texts = [path.read_text() for path in files.apt_files()]
    for mirror in MIRRORS.values():
        if any(uses_host(text, _host(mirror.apt_base)) for text in texts):
            return mirror.name
    originals = rendered_apt(files, None) if files.originals.is_dir() else {}
    current = {path.relative_to(files.root): path.read_text() for path in files.apt_files()}
    return NO_MIRROR if current == originals else "custom"
