"""The README's first screen and the variant tables (README and docs) stay true to the project."""

from __future__ import annotations

import pytest
from matrices import WriteMatrix

from pudev.common.generated import block, markers
from pudev.config.loader import load_matrix
from pudev.config.variant_table import variants_markdown, with_table
from pudev.devtools.docs_tables import GENERATORS
from pudev.paths import REPO_ROOT

README = REPO_ROOT / "README.md"


@pytest.mark.parametrize(("page", "name"), [("README.md", "tags"), ("docs/using/variants.md", "tags"),
                                           ("docs/using/variants.md", "variants")])
def test_the_matrix_tables_are_generated_from_it(page: str, name: str) -> None:
    """Which tag for my GPU and driver (README and docs), and the whole matrix (docs)."""
    body = block((REPO_ROOT / page).read_text(), markers(name))
    assert body is not None, f"{page} lost its <!-- {name}:start/end --> markers"
    assert body == GENERATORS[name](), f"{page}'s {name} table is out of date: `python -m pudev.devtools.docs_tables`"


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
