"""Markdown tables, one renderer for every page pudev writes (docs tables, build manifests): a
cell holding `|`, such as a layer's `RUN a | b`, stays one cell."""

from __future__ import annotations

from pudev.common.table import markdown_table


def _cells(line: str) -> list[str]:
    """A rendered row split on unescaped pipes, as a Markdown renderer splits it."""
    parts, current, previous = [], "", ""
    for char in line.strip().strip("|"):
        if char == "|" and previous != "\\":
            parts.append(current.strip())
            current = ""
        else:
            current += char
        previous = char
    return [*parts, current.strip()]


def test_a_pipe_inside_a_cell_does_not_split_it() -> None:
    lines = markdown_table(["size", "created by"], [["3.0 MiB", "RUN apt-get update | tee log"], [1, 2]]).splitlines()
    assert lines[1] == "|---|---|"
    assert [len(_cells(line)) for line in lines] == [2, 2, 2, 2]
    assert _cells(lines[2])[1] == "RUN apt-get update \\| tee log"
    assert _cells(lines[3]) == ["1", "2"]
