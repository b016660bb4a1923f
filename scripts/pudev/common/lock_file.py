"""The hashed requirement lock `pudev lock` writes (uv pip compile --generate-hashes), read one way
everywhere: the host's checks, the image's record, and the build's package steps, which mount this
file alone (stdlib only, so an edit elsewhere in pudev leaves those steps cached). It also cuts a
lock in two: the packages a list names (what rarely changes), and the rest.
Usage (a build step): python3 lock_file.py split LOCK NAMES OUT_DIR
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)")
PARTS = ("rarely-changing", "the-rest")


def normalize(name: str) -> str:
    """PEP 503: the spelling under which pip, uv and the index compare names."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Pin:
    name: str  # normalized
    version: str
    text: str  # the requirement line with its continuation, hash and comment lines


def read_pins(text: str) -> list[Pin]:
    """Every pinned requirement of a lock, in order (comments before the first one left out)."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
    pins = []
    for block in blocks:
        match = _PIN.match(block[0])
        if match:
            pins.append(Pin(normalize(match["name"]), match["version"], "\n".join(block)))
    return pins


def pinned(text: str) -> dict[str, str]:
    """name -> version of every pin."""
    return {pin.name: pin.version for pin in read_pins(text)}


def names_in(text: str) -> set[str]:
    """The package names a list file holds, one a line, `#` comments allowed."""
    return {normalize(line.split("#")[0].strip()) for line in text.splitlines() if line.split("#")[0].strip()}


def _requirement(pin: Pin) -> str:
    """A pin's requirement and hash lines, without the resolver's `# via` notes: a lock resolved again with
    the same pins then gives the same part, and the build step that installs it stays cached."""
    return "".join(f"{line}\n" for line in pin.text.splitlines() if not line.lstrip().startswith("#"))


def split(text: str, names: set[str]) -> tuple[str, str]:
    """(the pins `names` names, every other pin), each as lock text."""
    pins = read_pins(text)
    chosen = "".join(_requirement(pin) for pin in pins if pin.name in names)
    rest = "".join(_requirement(pin) for pin in pins if pin.name not in names)
    return chosen, rest


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] != "split":
        print("usage: python3 lock_file.py split LOCK NAMES OUT_DIR", file=sys.stderr)
        return 2
    lock, names, out = Path(argv[1]), Path(argv[2]), Path(argv[3])
    out.mkdir(parents=True, exist_ok=True)
    for part, text in zip(PARTS, split(lock.read_text(), names_in(names.read_text())), strict=True):
        (out / f"{part}.txt").write_text(text)
        print(f"lock_file: {part}: {len(read_pins(text))} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
