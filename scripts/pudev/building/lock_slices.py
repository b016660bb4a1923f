"""The lock cut into the image's package layers (requirements/layers.txt): each
layer's slice is the lock's own lines for the packages that layer installs, so
hashes still come from the lock, and every pin lands in exactly one slice.

The image build runs this file as a script in a stage of its own (standard library
only, no pudev on the path) and each install step mounts its one slice: a pin
edited in a later layer leaves the earlier slices byte for byte the same, and
BuildKit, which keys mounts by content, keeps those layers cached. Comments are
left out of the slices for that reason (`# via` lines change with other pins).
With --layered, the layers are cut from that lock instead: the lock the layers were
last cut at (`pudev lock --keep-layers` keeps it), so a pin moved since leaves every
layer cached, and OUT/since/pins.txt holds what the lock pins otherwise (its own
lines: to install over the layers, in a step after them) and OUT/since/dropped.txt
the names it pins no more (to remove). Where that file is absent, the layers are
cut from the lock and both are empty.
Usage: python3 lock_slices.py [--layered LAYERED_LOCK] LOCK LAYERS OUT NAME... (NAME: the
layers, in order, that the Dockerfile installs; OUT/NAME.txt is written for each).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")
SECTION = re.compile(r"^\[([A-Za-z0-9_-]+)\]$")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Layer:
    name: str
    packages: tuple[str, ...]  # normalized names, as listed; none for the one layer that takes the rest


@dataclass(frozen=True)
class Pin:
    name: str  # normalized
    version: str
    text: str  # the requirement line with its continuation (hash) lines


def read_layers(text: str) -> list[Layer]:
    """[section] headers, one package name a line; exactly one section names nothing (it takes the rest)."""
    sections: list[tuple[str, list[str]]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        header = SECTION.match(line)
        if header:
            sections.append((header.group(1), []))
        elif line and not sections:
            raise ValueError(f"line {number}: '{line}' before the first [section]")
        elif line:
            sections[-1][1].append(normalize(line))
    names = [name for name, _ in sections]
    every = [package for _, packages in sections for package in packages]
    if sum(1 for _, packages in sections if not packages) != 1:
        raise ValueError("exactly one [section] must name no package: it takes every package the others leave")
    if len(set(names)) != len(names):
        raise ValueError(f"a [section] is declared twice: {names}")
    if len(set(every)) != len(every):
        raise ValueError(f"a package is named twice: {sorted({p for p in every if every.count(p) > 1})}")
    return [Layer(name, tuple(packages)) for name, packages in sections]


def read_pins(lock: str) -> tuple[list[Pin], list[str]]:
    """The lock's pins, comments left out, and its option lines (--index-url ...), which every slice keeps."""
    blocks: list[list[str]] = []
    options: list[str] = []
    open_block = False  # whether an indented line continues the last pin
    for raw in lock.splitlines():
        line = raw.rstrip()
        if not line or line.lstrip().startswith("#"):
            open_block = open_block and bool(line)  # a `# via` line inside a block is dropped, not an end
        elif line[0].isspace():
            if not open_block:
                raise ValueError(f"an indented lock line that follows no pin: {line}")
            blocks[-1].append(line)
        elif line.startswith("-"):
            options.append(line)
            open_block = False
        else:
            blocks.append([line])
            open_block = True
    pins = []
    for block in blocks:
        match = PIN.match(block[0])
        if match is None:
            raise ValueError(f"a lock line that pins no version: {block[0]}")
        pins.append(Pin(normalize(match.group(1)), match.group(2), "\n".join(block)))
    return pins, options


def layer_of(name: str, layers: list[Layer]) -> str:
    """The layer that installs package `name`: the one naming it, else the one that names nothing."""
    wanted = normalize(name)
    return next((layer.name for layer in layers if wanted in layer.packages),
                next(layer.name for layer in layers if not layer.packages))


def split(lock: str, layers: list[Layer]) -> dict[str, str]:
    """Layer name -> its slice of the lock (every layer, in order; a slice may be empty)."""
    pins, options = read_pins(lock)
    slices: dict[str, list[str]] = {layer.name: [] for layer in layers}
    for pin in pins:
        slices[layer_of(pin.name, layers)].append(pin.text)
    return {name: "".join(f"{line}\n" for line in [*options, *texts]) if texts else ""
            for name, texts in slices.items()}


def since_layered(lock: str, layered: str) -> tuple[str, list[str]]:
    """What `lock` pins otherwise than `layered`, the lock the layers were cut from: its own lines for every
    pin that is new or differs in any line (a version, a hash), and the names `layered` pins and it does not."""
    pins, options = read_pins(lock)
    earlier = {pin.name: pin.text for pin in read_pins(layered)[0]}
    moved = [pin.text for pin in pins if earlier.get(pin.name) != pin.text]
    pinned = {pin.name for pin in pins}
    text = "".join(f"{line}\n" for line in [*options, *moved]) if moved else ""
    return text, sorted(name for name in earlier if name not in pinned)


def main(argv: list[str]) -> int:
    layered_file = ""
    if argv[:1] == ["--layered"]:
        layered_file, argv = argv[1], argv[2:]
    lock, layers_file, out, *expected = argv
    layers = read_layers(Path(layers_file).read_text(encoding="utf-8"))
    if [layer.name for layer in layers] != expected:
        print(f"lock_slices: {layers_file} declares the layers {[layer.name for layer in layers]}, but the "
              f"Dockerfile installs {expected}: give each [section] its install step", file=sys.stderr)
        return 2
    lock_text = Path(lock).read_text(encoding="utf-8")
    layered = Path(layered_file) if layered_file else None
    layered_text = layered.read_text(encoding="utf-8") if layered and layered.is_file() else lock_text
    Path(out, "since").mkdir(parents=True, exist_ok=True)
    for name, text in split(layered_text, layers).items():
        Path(out, f"{name}.txt").write_text(text, encoding="utf-8")
        print(f"lock_slices: {name}: {sum(1 for line in text.splitlines() if PIN.match(line))} pins")
    moved, dropped = since_layered(lock_text, layered_text)
    Path(out, "since", "pins.txt").write_text(moved, encoding="utf-8")
    Path(out, "since", "dropped.txt").write_text("".join(f"{name}\n" for name in dropped), encoding="utf-8")
    if layered_text is not lock_text:
        print(f"lock_slices: the layers cut from {layered_file}; since then "
              f"{sum(1 for line in moved.splitlines() if PIN.match(line))} pins moved, {len(dropped)} dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
