"""The README's first screen and its variant table stay true to the project."""

from __future__ import annotations

import re

from matrices import WriteMatrix

from pudev.config.loader import load_matrix
from pudev.config.variant_table import variants_markdown, with_table
from pudev.paths import REPO_ROOT, VARIANTS_FILE

README = REPO_ROOT / "README.md"


def test_the_variant_table_is_generated_from_the_matrix() -> None:
    match = re.search(r"<!-- variants:start -->\n(.*?)\n<!-- variants:end -->", README.read_text(), re.DOTALL)
    assert match, "README.md lost its <!-- variants:start/end --> markers"
    assert match.group(1) == variants_markdown(load_matrix(VARIANTS_FILE)), (
        "README's variant table is out of date: `pudev lock` refreshes it (or paste `pudev variants --markdown`)")


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
