"""The README's first screen and the variant tables (README and docs) stay true to the project."""

from __future__ import annotations

import re

import pytest
from matrices import WriteMatrix

from pudev.config.loader import load_matrix
from pudev.config.variant_table import variants_markdown, with_table
from pudev.paths import REPO_ROOT, VARIANTS_FILE

README = REPO_ROOT / "README.md"


@pytest.mark.parametrize("page", ["README.md", "docs/using/variants.md"])
def test_the_variant_table_is_generated_from_the_matrix(page: str) -> None:
    match = re.search(r"<!-- variants:start -->\n(.*?)\n<!-- variants:end -->", (REPO_ROOT / page).read_text(),
                      re.DOTALL)
    assert match, f"{page} lost its <!-- variants:start/end --> markers"
    assert match.group(1) == variants_markdown(load_matrix(VARIANTS_FILE)), (
        f"{page}'s variant table is out of date: `python -m pudev.devtools.docs_tables` refreshes it")


def test_the_table_refresh_replaces_only_the_table(matrix_file: WriteMatrix) -> None:
    matrix = load_matrix(matrix_file())
    stale = "intro\n<!-- variants:start -->\n| old |\n<!-- variants:end -->\nrest\n"
    assert with_table(stale, matrix) == (f"intro\n<!-- variants:start -->\n{variants_markdown(matrix)}\n"
                                         "<!-- variants:end -->\nrest\n")
    assert with_table("no markers\n", matrix) == "no markers\n"


def test_the_first_screen_has_the_build_and_the_test_command() -> None:
    first_screen = "\n".join(README.read_text().splitlines()[:25])
    assert "make build-local" in first_screen and "make test " in first_screen
    assert "exec make test" in (REPO_ROOT / ".ci/run").read_text()  # CI runs exactly that command


def test_the_readme_stays_a_front_page() -> None:
    """Everything past the first commands, the variants and `docker run` lives in docs/, by audience."""
    size = len(README.read_bytes())
    assert size <= 15 * 1024, f"README.md is {size} bytes, over 15 KiB: move the detail into docs/"
