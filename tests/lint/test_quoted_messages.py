"""Troubleshooting quotes pudev's own messages (the ```text blocks of docs/troubleshooting*.md): each
must still be what the code prints, or a user searching for the message finds a page that no longer
matches it. `<...>` in a quote stands for what differs per machine; the rest must be in the code's
string literals (Python's, the f-strings' fixed parts, and the image's shell scripts)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

PAGES = sorted((REPO_ROOT / "docs").glob("troubleshooting*.md"))
TEXT_BLOCK = re.compile(r"^```text\n(.*?)^```", re.MULTILINE | re.DOTALL)
PLACEHOLDER = re.compile(r"<[^<>\n]+>")
VERIFY_ROW = re.compile(r"^(?P<check>\S.*?)  +(?:ok|WARN|FAIL|skip)  +(?P<detail>.+)$")
FIX = re.compile(r"^fix \((?P<check>[^)]+)\): (?P<fix>.+)$")
# `pudev dist` prefixes its ranks' lines with its own name (pudev/image/dist/worker.py).
PROGRAM = re.compile(r"^(?P<program>pudev(?: dist)?|pudev-entrypoint|start-jupyter|cuda-switch)(?:: error)?: "
                     r"(?P<text>.+)$")
EDGES = " ()[]:;,.'\"`"
SHORTEST = 8  # a run of the quote's text shorter than this says nothing about where it came from


def _literals(path: Path) -> list[str]:
    """A Python file's strings, an f-string's placeholders as NUL (nothing in a quote matches across one)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.JoinedStr):
            found.append("".join(part.value if isinstance(part, ast.Constant) and isinstance(part.value, str)
                                 else "\0" for part in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
    return found


SHELL_EXPANSION = re.compile(r"\\?\$(\{[^}]*\}|\([^)]*\)|\w+)")


@cache
def corpus() -> str:
    """Every string the code may print, NUL between them; a shell script's expansions are NUL too."""
    python = [*(REPO_ROOT / "scripts/pudev").rglob("*.py"), *(REPO_ROOT / "docker").rglob("*.py")]
    shell = [path for path in (REPO_ROOT / "docker").rglob("*")
             if path.is_file() and (path.read_bytes()[:32].startswith(b"#!/bin/sh") or path.suffix == ".sh")]
    return "\0".join([text for path in python for text in _literals(path)] +
                      [SHELL_EXPANSION.sub("\0", path.read_text()) for path in shell])


def _longest(run: str, text: str, *, opens: bool, closes: bool) -> int:
    """The length of the longest start of `run` in `text`: after a NUL where `opens`, before one where
    `closes` (where one literal ends and the next begins, as a composed message joins them)."""
    before = "\0" if opens else ""
    for length in range(len(run), 0, -1):
        if before + run[:length] + ("\0" if closes and length < len(run) else "") in text:
            return length
    return 0


def uncovered(fragment: str, text: str) -> str | None:
    """The first run of `fragment` that the code's strings do not hold (None: all of it is there). A
    message composed of several literals is covered by them in turn, each joined where one ends."""
    fragment = fragment.strip(EDGES)
    start = 0
    while start < len(fragment):
        rest = fragment[start:]
        length = _longest(rest, text, opens=start > 0, closes=True)
        if length < min(SHORTEST, len(rest)):
            return rest[:SHORTEST * 3]
        start += length
    return None


def message_parts(line: str) -> list[str]:
    """The parts of a quoted output line that pudev's code writes: a verify row's check and detail, a fix
    line's fix, or a program's message after its name."""
    line = line.strip()
    for pattern, groups in ((FIX, ("check", "fix")), (PROGRAM, ("text",)), (VERIFY_ROW, ("check", "detail"))):
        match = pattern.match(line)
        if match:
            return [match.group(group) for group in groups]
    raise AssertionError(f"not a line pudev prints (a verify row, a fix line, or 'program: message'): {line!r}")


def quoted_lines() -> list[tuple[str, str]]:
    return [(page.name, line) for page in PAGES for block in TEXT_BLOCK.findall(page.read_text())
            for line in block.splitlines() if line.strip()]


def test_troubleshooting_quotes_pudev() -> None:
    assert len(quoted_lines()) >= 12, "docs/troubleshooting.md quotes what pudev verify and the image print"


@pytest.mark.parametrize(("page", "line"), quoted_lines(), ids=lambda value: value[:60])
def test_a_quoted_message_is_what_the_code_prints(page: str, line: str) -> None:
    for part in message_parts(line):
        for fragment in PLACEHOLDER.split(part):
            missing = uncovered(fragment, corpus())
            assert missing is None, f"{page}: {missing!r} of {line!r} is in no message of the code: update the page"


def test_a_changed_message_is_caught() -> None:
    """The check can fail: one word of a real message changed, or a message that was never written."""
    assert uncovered("no GPU visible to the container", corpus()) is None
    assert uncovered("no GPU visible inside the container", corpus()) is not None
    assert uncovered("DataLoader workers may crash", corpus()) is not None
    assert message_parts("pudev dist: note: x") == ["note: x"]
