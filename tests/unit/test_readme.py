"""The README's first screen and the variant tables (README and docs) stay true to the project."""

from __future__ import annotations

import pytest
from docs_tables import GENERATORS
from matrices import WriteMatrix

from pudev.common.generated import block, markers
from pudev.config.loader import load_matrix
from pudev.config.variant_table import variants_markdown, with_table
from pudev.paths import REPO_ROOT

README = REPO_ROOT / "README.md"


@pytest.mark.parametrize(("page", "name"), [("README.md", "tags"), ("docs/using/variants.md", "tags"),
                                           ("docs/using/variants.md", "variants"), ("README.zh-CN.md", "tags-zh"),
                                           ("docs/using/variants.zh.md", "tags-zh"),
                                           ("docs/using/variants.zh.md", "variants-zh")])
def test_the_matrix_tables_are_generated_from_it(page: str, name: str) -> None:
    """Which tag for my GPU and driver (README and docs), and the whole matrix (docs); the Chinese pages
    show the Chinese rendering of each."""
    body = block((REPO_ROOT / page).read_text(), markers(name))
    assert body is not None, f"{page} lost its <!-- {name}:start/end --> markers"
    assert body == GENERATORS[name](), f"{page}'s {name} table is out of date: run `make docs`"


def test_the_table_refresh_replaces_only_the_table(matrix_file: WriteMatrix) -> None:
    matrix = load_matrix(matrix_file())
    stale = "intro\n<!-- variants:start -->\n| old |\n<!-- variants:end -->\nrest\n"
    assert with_table(stale, matrix) == (f"intro\n<!-- variants:start -->\n{variants_markdown(matrix)}\n"
                                         "<!-- variants:end -->\nrest\n")
    assert with_table("no markers\n", matrix) == "no markers\n"


FIRST_SCREEN = 45  # lines: a laptop's terminal or browser window


@pytest.mark.parametrize("readme", ["README.md", "README.zh-CN.md"])
def test_the_first_screen_has_the_users_run_and_the_maintainers_two_commands(readme: str) -> None:
    first_screen = "\n".join((REPO_ROOT / readme).read_text().splitlines()[:FIRST_SCREEN])
    assert "docker run --rm -it --gpus all --shm-size=8g" in first_screen  # a user's quick start
    assert "make build-local" in first_screen and "make test " in first_screen
    assert "exec make test" in (REPO_ROOT / ".ci/run").read_text()  # CI runs exactly that command


def test_the_license_is_the_one_the_images_are_labelled_with() -> None:
    from pudev.building.labels import OCI, SourceInfo, build_labels
    from pudev.paths import VARIANTS_FILE

    variant = next(iter(load_matrix(VARIANTS_FILE).variants.values()))
    label = build_labels(variant, SourceInfo("0" * 40, "2026-12-05T00:00:00Z", ""))[f"{OCI}.licenses"]
    assert (REPO_ROOT / "LICENSE").read_text().startswith(f"{label} License\n")
    assert f'license = {{ text = "{label}" }}' in (REPO_ROOT / "pyproject.toml").read_text()


def test_the_readme_stays_a_front_page() -> None:
    """Everything past the first commands, the variants and `docker run` lives in docs/, by audience."""
    size = len(README.read_bytes())
    assert size <= 15 * 1024, f"README.md is {size} bytes, over 15 KiB: move the detail into docs/"


def test_the_tag_table_names_the_cards_people_own() -> None:
    """Who holds an RTX 4090 (Ada, sm_89) finds it in each row that runs on it, and in no row that does not:
    derived from each variant's CUDA and arch list, whatever the matrix."""
    from pudev.common.gpu_arch import capability_of, torch_oldest
    from pudev.config.variant_table import tags_markdown
    from pudev.paths import VARIANTS_FILE

    matrix = load_matrix(VARIANTS_FILE)
    rows = {line.split("|")[1].split(",")[0].strip(" `"): line for line in tags_markdown(matrix).splitlines()[2:]}
    for name, variant in matrix.variants.items():
        amd64 = rows[name].split("|")[6]
        low = capability_of(torch_oldest(variant.cuda, "linux/amd64"))
        high = max(capability_of(entry.removesuffix("+PTX")) for entry in variant.default.arch_list.split(";"))
        assert ("RTX 40" in amd64) == (low <= (8, 9) and high[0] >= 8), (name, amd64)
        assert ("GTX 10" in amd64) == (low <= (6, 1)), (name, amd64)
        assert ("RTX 50" in amd64) == (high[0] >= 12), (name, amd64)
        assert amd64.count("GeForce") <= 1  # one series: "GeForce RTX 30, RTX 40"
