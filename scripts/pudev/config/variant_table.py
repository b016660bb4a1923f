"""The matrix as people read it: `pudev variants` in a terminal, and
`pudev variants --markdown` for the README and docs/using/variants.md (a test keeps both copies current)."""

from __future__ import annotations

from collections.abc import Callable

from pudev.common.generated import markers, replace_block
from pudev.common.table import markdown_table, render_table
from pudev.common.variant import as_text, every_contract, travelling_values
from pudev.config.model import Matrix, Variant


def base_text(variant: Variant) -> str:
    """The base as declared: an official image, or one the build makes from torch's wheels (never silent)."""
    if variant.base == "wheels":
        index = variant.torch_index or "the default index"
        return f"{variant.base_image} + torch {variant.torch} wheels from {index}"
    return variant.base_image


def _toolkits_cell(variant: Variant) -> str:
    return " + ".join(f"{t.version}{'*' if t.version == variant.default_toolkit else ''}" for t in variant.toolkits)


# How a column's cell reads where its plain text would say less (the rest: the value as text).
CELLS: dict[str, Callable[[Variant], str]] = {
    "name": lambda variant: variant.name + (" (latest)" if variant.latest else ""),
    "platform": lambda variant: variant.platform.removeprefix("linux/"),
    "base_image": base_text,
    "toolkits": _toolkits_cell,
}
# Each column is declared with its field (pudev.common.variant), in the fields' order.
HEADERS = [contract.column for _, contract in every_contract() if contract.column]


def _row(variant: Variant) -> list[str]:
    return [CELLS[name](variant) if name in CELLS else as_text(value)
            for name, contract, value in travelling_values(variant) if contract.column]


def variants_table(matrix: Matrix) -> str:
    """One row per variant and platform: each platform's build has its own base and arch list."""
    return render_table(HEADERS, [_row(variant) for variant in matrix.every_build()])


def variants_markdown(matrix: Matrix) -> str:
    return markdown_table(HEADERS, [_row(variant) for variant in matrix.every_build()])


MARKERS = markers("variants")


def with_table(readme: str, matrix: Matrix) -> str:
    """A page's text (the README, a docs page) with its generated variant table replaced (unchanged without
    the markers)."""
    return replace_block(readme, MARKERS, variants_markdown(matrix))
