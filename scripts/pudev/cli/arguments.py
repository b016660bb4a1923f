"""The paths pudev writes, checked when the command line is parsed (a flag's value or its default),
before the engine or a registry is asked anything: a path that cannot be written fails at once,
naming its flag, rather than after a push or a test run that took minutes; and no command overwrites
a file it did not write: an existing file must be of the kind the flag writes (or empty)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path

from pudev.common.errors import PudevError


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _is_bake_file(text: str) -> bool:
    data = _json(text)
    return isinstance(data, dict) and "target" in data and set(data) <= {"group", "target", "variable"}


def _is_changelog(text: str) -> bool:
    from pudev.reports.changelog import is_changelog

    return is_changelog(text)


def _is_manifest(text: str) -> bool:
    data = _json(text)
    if isinstance(data, dict):
        return {"image", "image_id", "labels"} <= set(data)
    return text.startswith("# Build manifest: ")


# What an existing file must hold for a flag to replace it: the kinds of file pudev writes.
KINDS: dict[str, tuple[str, Callable[[str], bool]]] = {
    "bake": ("a bake file pudev wrote", _is_bake_file),
    "changelog": ("a changelog", _is_changelog),
    "junit": ("a JUnit XML report", lambda text: "<testsuite" in text[:4096]),
    "manifest": ("a build manifest", _is_manifest),
    "reference": ("a candidate reference", lambda text: len(text.split()) == 1 and "@sha256:" in text),
    "sbom": ("a CycloneDX SBOM", lambda text: isinstance(data := _json(text), dict)
             and data.get("bomFormat") == "CycloneDX"),
}


def refuse_foreign(path: Path, kind: str, flag: str) -> None:
    """An existing, non-empty file that is not of `kind` is someone else's: refuse to replace it."""
    what, holds = KINDS[kind]
    if not path.is_file() or path.stat().st_size == 0:
        return
    try:
        text = path.read_text(encoding="utf-8", errors="strict")
    except (OSError, UnicodeDecodeError):
        text = ""
    if not holds(text):
        raise PudevError(f"{flag} {path}: holds something other than {what}, and pudev replaces only files it "
                         "wrote; name a new path (or move that file away)")


def output_file(text: str, flag: str, *, kind: str, makes_folders: bool = False) -> Path:
    """`text` as a file pudev may write; `makes_folders`: the writer creates missing folders on the way."""
    path = Path(text)
    if path.is_dir():
        raise PudevError(f"{flag} {text}: a folder, not a file; name a file in it")
    folder = _writable_folder(path.parent, text, flag, makes_folders=makes_folders)
    if (path.exists() and not os.access(path, os.W_OK)) or not os.access(folder, os.W_OK | os.X_OK):
        raise PudevError(f"{flag} {text}: not writable by this user; name a path you may write")
    refuse_foreign(path, kind, flag)
    return path


def output_folder(text: str, flag: str) -> Path:
    """A folder pudev writes files into, created (with its parents) if missing."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise PudevError(f"{flag} {text}: a file, not a folder; name a folder")
    if not os.access(_writable_folder(path, text, flag, makes_folders=True), os.W_OK | os.X_OK):
        raise PudevError(f"{flag} {text}: not writable by this user; name a folder you may write")
    return path


def _writable_folder(folder: Path, text: str, flag: str, *, makes_folders: bool) -> Path:
    if makes_folders:
        while not folder.exists() and folder != folder.parent:  # the nearest folder that exists is the one written
            folder = folder.parent
    if not folder.is_dir():
        raise PudevError(f"{flag} {text}: no folder {folder} to write it in; create it or name another path")
    return folder


class OutputPath:
    """argparse `type=` of a flag that names where pudev writes: argparse runs it on a given value and on a
    string default alike, so `pudev bake` checks ./docker-bake.json just as `--out FILE` is checked."""

    def __init__(self, flag: str, kind: str, *, stdout: bool = False, folder: bool = False,
                 makes_folders: bool = False) -> None:
        self.flag, self.kind, self.stdout, self.folder, self.makes_folders = flag, kind, stdout, folder, makes_folders
        self.__name__ = "path"  # argparse names the type in its own messages

    def __call__(self, text: str) -> str:
        if (self.stdout and text == "-") or not text:  # "" is a default meaning "none" (a typed "" never gets here)
            return text
        try:
            if self.folder:
                output_folder(text, self.flag)
            else:
                output_file(text, self.flag, kind=self.kind, makes_folders=self.makes_folders)
        except PudevError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return text
