"""Generated blocks inside hand-written files: the text between a start and an end marker is
rendered from data (the matrix, a benchmark file) and replaced whole, so tests can compare it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path


def markers(name: str) -> tuple[str, str]:
    """The start and end markers of the block called `name`: `<!-- name:start -->` ... `<!-- name:end -->`."""
    return f"<!-- {name}:start -->\n", f"\n<!-- {name}:end -->"


def replace_block(text: str, markers: tuple[str, str], body: str) -> str:
    """`text` with the block between `markers` replaced by `body` (unchanged without the markers)."""
    start, end = markers
    if start not in text or end not in text:
        return text
    before, rest = text.split(start, 1)
    # The end marker's newline may be the start marker's own, in an empty block.
    _, after = ("\n" + rest).split(end, 1)
    return f"{before}{start}{body}{end}{after}"


def block(text: str, markers: tuple[str, str]) -> str | None:
    """The generated block's current body, or None without the markers."""
    start, end = markers
    if start not in text or end not in text:
        return None
    return ("\n" + text.split(start, 1)[1]).split(end, 1)[0][1:]


def rewrite_files(paths: Iterable[Path], render: Callable[[str], str]) -> list[Path]:
    """Write `render(text)` into each file whose text it changes; the files changed."""
    changed = []
    for path in paths:
        text = path.read_text()
        updated = render(text)
        if updated != text:
            path.write_text(updated)
            changed.append(path)
    return changed
