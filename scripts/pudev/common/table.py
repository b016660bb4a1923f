"""Plain-text tables for terminal output (no third-party dependency)."""

from __future__ import annotations

from collections.abc import Sequence


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces, with a dashed rule under the header."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))

    def line(values: Sequence[str]) -> str:
        return "  ".join(value.ljust(width) for value, width in zip(values, widths, strict=True)).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(list(headers)), rule, *(line(row) for row in cells)])
