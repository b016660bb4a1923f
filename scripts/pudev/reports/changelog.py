"""CHANGELOG.md: what a moving tag (cu132, latest) holds after it moved, written for the
people who pull it. An entry names the tags, torch, CUDA, both toolkits, the driver each
needs and the platforms, before and after; with both images' manifests it also lists the
packages that went up, down, in and out (the same comparison as `pudev manifest --diff`).

`pudev new-torch` writes an entry from the matrix on release day; `pudev changelog A B`
writes it again from the two published images, packages included. Entries are keyed, so
the second replaces the first instead of adding another.

An entry goes only into a changelog this project writes (`is_changelog`) or a new file: any
other file is refused, never replaced. What precedes the title (a byte-order mark, blank
lines, HTML comments) is tolerated and kept."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pudev.common.cuda_drivers import driver_minimum
from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.common.inputs import InputFile
from pudev.common.table import markdown_table
from pudev.paths import REPO_ROOT
from pudev.reports.manifest_diff import REQUIRED, Change, package_changes

CHANGELOG = REPO_ROOT / "CHANGELOG.md"

HEADER = """# Changelog

What each moving tag (`cu132`, `latest`, ...) holds after it moved to another torch, CUDA or toolkit
pair: torch, CUDA, both toolkits, the driver it needs, and the packages that changed. Versioned tags
(`2.15.0-cu132-py3.12`) never move to another torch, and commit tags (`cu132-1a2b3c4`) never move (the
tag policy is in the docs: Using the image > The variants). Entries are generated, newest first: by
`pudev new-torch` on a torch release day, then again from the published images by `pudev changelog`.
"""
TITLE = HEADER.splitlines()[0]
_TITLE = re.compile(re.escape(TITLE) + r"[ \t]*\r?(?:\n|$)")
_KEY = re.compile(r"^<!-- changelog: (?P<key>[^>]+) -->[ \t]*\r?$", re.MULTILINE)
BOM = "\ufeff"
DATE_FORMAT = "YYYY-MM-DD, e.g. 2026-12-22"
# What AFTER and --before take: no variant name (that is `pudev manifest --diff`'s shortcut, not this command's).
MANIFEST_FIX = "give a JSON file that `pudev manifest VARIANT` wrote (manifests/VARIANT.json), or an image"


@dataclass(frozen=True)
class TagState:
    """What the image behind a tag holds, as far as a changelog says."""

    variant: str
    torch: str
    cuda: str
    toolkits: tuple[str, ...]
    platforms: tuple[str, ...]
    latest: bool = False
    python: str = ""

    @property
    def tags(self) -> tuple[str, ...]:
        """The moving tags that point at it: the variant's, and latest where it is the default."""
        return (self.variant, "latest") if self.latest else (self.variant,)


def state_of_manifest(manifest: dict[str, Any]) -> TagState:
    """From a `pudev manifest` JSON: the image's record and labels (pudev.building.labels)."""
    record, labels = manifest.get("record") or {}, manifest.get("labels") or {}
    platforms = tuple(filter(None, labels.get("org.pudev.platforms", "").split(",")))
    return TagState(record.get("variant", "?"), record.get("torch", "?"), record.get("cuda", "?"),
                    tuple(t["version"] for t in record.get("toolkits") or []), platforms,
                    labels.get("org.pudev.latest") == "true", str(record.get("python", "")))


@dataclass(frozen=True)
class Move:
    """One tag, and the images it pointed at before (None: a new tag) and after."""

    tag: str
    before: TagState | None
    after: TagState


def moves_of(after: TagState, previous: Sequence[TagState]) -> list[Move]:
    """Each of `after`'s tags, with the state among `previous` that carried the same tag."""
    return [Move(tag, next((state for state in previous if tag in state.tags), None), after) for tag in after.tags]


def _moved(before: str, after: str) -> str:
    return after if before in ("", after) else f"{before} → **{after}**"


def _row(move: Move) -> list[str]:
    old, new = move.before or TagState("", "", "", (), ()), move.after
    return [f"`{move.tag}`" + ("" if move.before else " (new)"),
            _moved(old.variant if old.variant != new.variant else "", new.variant),
            _moved(old.torch, new.torch), _moved(old.cuda, new.cuda),
            _moved(" + ".join(old.toolkits), " + ".join(new.toolkits)),
            _moved(driver_minimum(old.cuda) if old.cuda else "", driver_minimum(new.cuda)),
            _moved(", ".join(p.removeprefix("linux/") for p in old.platforms),
                   ", ".join(p.removeprefix("linux/") for p in new.platforms))]


def _package_lines(found: dict[str, list[Change]]) -> list[str]:
    lines = []
    for section, section_changes in found.items():
        for kind in ("up", "down", "added", "removed"):
            named = [change for change in section_changes if change.kind == kind]
            if named:
                shown = ", ".join(f"{c.name} {c.before} → {c.after}" if kind in ("up", "down") else
                                  f"{c.name} {c.after or c.before}" for c in named)
                lines.append(f"- {section}, {kind} ({len(named)}): {shown}")
    return lines or ["- no package changed"]


def entry(key: str, title: str, moves: Sequence[Move], *,
          packages: dict[str, dict[str, list[Change]]] | None = None, notes: Sequence[str] = ()) -> str:
    """One keyed entry: a row per tag that moved (or is new), notes, and the package changes behind each
    tag whose images' manifests were both read (None: not yet, said so)."""
    headers = ("tag", "variant", "torch", "CUDA", "toolkits", "driver", "platforms")
    lines = [f"<!-- changelog: {key} -->", f"## {title}", "", markdown_table(headers, [_row(m) for m in moves]), ""]
    lines += [*(f"- {note}" for note in notes), *([""] if notes else [])]
    if packages is None:
        lines += ["Packages: listed once the images are published (`pudev changelog`, which the publish "
                  "workflow runs).", ""]
    for tag, found in (packages or {}).items():
        lines += [f"Packages behind `{tag}`:", "", *_package_lines(found), ""]
    return "\n".join(lines)


def entry_key(after: TagState) -> str:
    """What an entry is about: the state a variant's tag moved to (publishing that state again replaces it)."""
    return f"{after.variant} torch {after.torch} toolkits {'+'.join(after.toolkits)}"


def title(date: str, after: TagState) -> str:
    return f"{date}: `{after.variant}`, torch {after.torch} with CUDA {after.cuda} ({' + '.join(after.toolkits)})"


def moved(before: TagState | None, after: TagState) -> bool:
    """Whether a tag's image changed in what an entry states: another variant (latest), torch, CUDA, toolkits
    or platforms. A republish with new packages alone does not count."""
    return before is None or (before.variant, before.torch, before.cuda, before.toolkits, before.platforms) != \
        (after.variant, after.torch, after.cuda, after.toolkits, after.platforms)


def notes_of(moves: Sequence[Move]) -> list[str]:
    """What a user of a moved tag must know: `latest` on another variant (and the way back), and the versioned
    tag of the image the variant's own tag held, which stays."""
    notes = []
    for move in moves:
        before, after = move.before, move.after
        if before is None:
            continue
        if move.tag == "latest" and before.variant != after.variant:
            notes.append(f"`latest` moves from {before.variant} to {after.variant}: `pip install torch` gives the "
                         f"CUDA {after.cuda} build of torch {after.torch}. Where the host's driver is older than "
                         f"{after.variant} needs, pull `{before.variant}` instead.")
        if move.tag == after.variant and before.torch != after.torch and before.python:
            notes.append(f"The versioned tag of the image `{after.variant}` held until now, "
                         f"`{before.torch}-{after.variant}-py{before.python}`, stays where it is.")
    return notes


def entry_for(after: TagState, previous: Sequence[TagState], *, date: str,
              packages: Callable[[Move], dict[str, list[Change]]] | None = None) -> tuple[str, str] | None:
    """(key, entry) for the image `after` and the states its tags held before (`previous`; a tag none of them
    carried is new), or None when no tag moved. `packages`: the package changes behind a move (the published
    images' manifests), else the entry says they follow."""
    moves = moves_of(after, previous)
    if not any(moved(move.before, after) for move in moves):
        return None
    found = None if packages is None else {move.tag: packages(move) for move in moves if move.before is not None}
    key = entry_key(after)
    return key, entry(key, title(date, after), moves, packages=found, notes=notes_of(moves))


def from_manifests(after: dict[str, Any], before: Sequence[dict[str, Any]], *, date: str) -> tuple[str, str] | None:
    """(key, entry) for the image `after` and the images its tags pointed at `before` (`pudev manifest`
    JSONs); a tag none of them carried is new. None when the variant's own tag moved to the same state."""
    previous = [(state_of_manifest(manifest), manifest) for manifest in before]

    def packages(move: Move) -> dict[str, list[Change]]:
        return package_changes(next(m for s, m in previous if s is move.before), after)
    return entry_for(state_of_manifest(after), [state for state, _ in previous], date=date, packages=packages)


def _title_at(changelog: str) -> int | None:
    """Where the title line starts, past a byte-order mark, blank lines and HTML comments (each on lines of
    their own); None when what comes first is anything else."""
    at = len(BOM) if changelog.startswith(BOM) else 0
    while True:
        while changelog.startswith((" ", "\t"), at):
            at += 1
        if changelog.startswith("<!--", at):
            close = changelog.find("-->", at)
            if close < 0:
                return None
            at = close + len("-->")
        elif changelog.startswith(("\r\n", "\n"), at):
            at = changelog.index("\n", at) + 1
        else:
            line_start = changelog[:at] in ("", BOM) or changelog[at - 1] == "\n"
            return at if line_start and _TITLE.match(changelog, at) else None


def is_changelog(text: str) -> bool:
    """Whether `text` is a changelog this project writes, one an entry may go into: its first line is
    `# Changelog` (after any byte-order mark, blank lines and HTML comments, which are kept), and what follows
    holds keyed entries, or nothing but the header this module writes. A new (empty) file is no changelog:
    the caller decides whether to start one."""
    at = _title_at(text)
    if at is None:
        return False
    body = text[at:]
    if _KEY.search(body):
        return True
    return " ".join(body.split()) in (TITLE, " ".join(HEADER.split()))


def _is_blank(text: str) -> bool:
    return not text.strip(BOM + " \t\r\n")


def with_entry(changelog: str, key: str, text: str, *, source: str = "CHANGELOG.md",
               fix: str = "restore it (git checkout -- CHANGELOG.md), then run again") -> str:
    """The changelog with `text` as entry `key`: in place of the entry of that key, else first. What precedes
    the title (a byte-order mark, blank lines, comments) stays as it was; a blank `changelog` starts one.
    Any other text is someone else's file: a one-line error naming `source`, with `fix`."""
    if _is_blank(changelog):
        changelog = (BOM if changelog.startswith(BOM) else "") + HEADER
    elif not is_changelog(changelog):
        raise PudevError(f"{source}: not a changelog pudev writes (its first line, past blank lines and comments, "
                         f"is not '{TITLE}' followed by entries), so it was left as it is; {fix}")
    at = _title_at(changelog) or 0
    preamble, body = changelog[:at], changelog[at:]
    marks = list(_KEY.finditer(body))
    for index, mark in enumerate(marks):
        if mark["key"] == key:
            end = marks[index + 1].start() if index + 1 < len(marks) else len(body)
            return preamble + body[:mark.start()] + text.rstrip("\n") + "\n\n" + body[end:].lstrip("\n")
    first = marks[0].start() if marks else len(body)
    head = body[:first].rstrip("\n") + "\n\n"
    rest = body[first:]
    return preamble + head + text.rstrip("\n") + "\n" + ("\n" + rest if rest else "")


def read_manifest_argument(item: str, source: str) -> dict[str, Any]:
    """A manifest for `pudev changelog`: a JSON file `pudev manifest` wrote, or an image to read one from. Its
    errors name `source`, the argument or flag that gave it (AFTER, --before): the changelog's own, never
    `pudev manifest --diff`'s."""
    if not (Path(item).exists() or item.endswith(".json") or parse_image_ref(item) is None):
        from pudev.reports.manifest import read_manifest

        try:
            return read_manifest(item, build_hint=f"docker pull {item}, or pudev build VARIANT")
        except PudevError as error:
            raise PudevError(f"{source}: {error}", detail=error.detail, exit_code=error.exit_code) from None
    file = InputFile(Path(item), "manifest", source, MANIFEST_FIX)
    data = file.read_json()
    if not isinstance(data, dict) or not all(key in data for key in REQUIRED) \
            or not all(isinstance(data[key], list) for key in REQUIRED[1:]):
        raise file.fail(f"is JSON but not a pudev manifest (it lacks {', '.join(REQUIRED)})")
    return data


def checked_date(text: str, flag: str) -> str:
    """A calendar date written YYYY-MM-DD, or a one-line error naming `flag`. An empty value is an error, not
    today: leaving the flag out is how to ask for today's date."""
    if not text.strip():
        raise PudevError(f"{flag} is empty: write the date as {DATE_FORMAT}, or leave {flag} out for today's")
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise PudevError(f"{flag} {text}: not a date; write it as {DATE_FORMAT}")


def today() -> str:
    return datetime.date.today().isoformat()
