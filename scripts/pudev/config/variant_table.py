"""The matrix as people read it: `pudev variants` in a terminal, and
`pudev variants --markdown` for the README (a test keeps the README's copy current)."""

from __future__ import annotations

from pudev.common.generated import replace_block
from pudev.common.table import render_table
from pudev.config.model import Matrix, Variant

HEADERS = ["variant", "platform", "torch", "CUDA", "Python", "base", "toolkits (* = CUDA_HOME)",
           "arch list (CUDA_HOME)"]


def base_text(variant: Variant) -> str:
    """The base as declared: an official image, or one the build makes from torch's wheels (never silent)."""
    if variant.base == "wheels":
        index = variant.torch_index or "the default index"
        return f"{variant.base_image} + torch {variant.torch} wheels from {index}"
    return variant.base_image


def _row(matrix: Matrix, variant: Variant) -> list[str]:
    latest = " (latest)" if variant.name == matrix.default_variant else ""
    toolkits = " + ".join(f"{t.version}{'*' if t.version == variant.default_toolkit else ''}"
                          for t in variant.toolkits)
    return [variant.name + latest, variant.platform.removeprefix("linux/"), variant.torch, variant.cuda,
            variant.python, base_text(variant), toolkits, variant.default.arch_list]


def variants_table(matrix: Matrix) -> str:
    """One row per variant and platform: each platform's build has its own base and arch list."""
    return render_table(HEADERS, [_row(matrix, variant) for variant in matrix.every_build()])


def variants_markdown(matrix: Matrix) -> str:
    rows = [_row(matrix, variant) for variant in matrix.every_build()]
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


MARKERS = ("<!-- variants:start -->\n", "\n<!-- variants:end -->")


def with_table(readme: str, matrix: Matrix) -> str:
    """The README text with its generated variant table replaced (unchanged without the markers)."""
    return replace_block(readme, MARKERS, variants_markdown(matrix))
