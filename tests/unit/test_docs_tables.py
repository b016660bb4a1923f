"""The docs' generated tables (tools/docs_tables.py): each marked block in README.md and docs/ is what its
generator renders from the matrix, benchmarks/ or the import contracts, and the refresh touches only the
blocks."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_tables import (
    GENERATORS,
    HAND_WRITTEN,
    REFRESH,
    block_names,
    documents,
    layering_markdown,
    refresh,
    rendered,
)

from pudev.common.generated import block, markers, replace_block
from pudev.paths import REPO_ROOT


def test_every_generated_block_is_current() -> None:
    cache: dict[str, str] = {}
    stale = []
    for path in documents():
        text = path.read_text()
        fresh = rendered(text, cache)
        stale += [f"{path.relative_to(REPO_ROOT)}: {name}" for name in block_names(text)
                  if block(text, markers(name)) != block(fresh, markers(name))]
    assert not stale, f"stale generated tables ({', '.join(stale)}): run `{REFRESH}` and commit the result"


def test_every_marker_names_a_generator_and_every_generator_is_used() -> None:
    used = {name for path in documents() for name in block_names(path.read_text())}
    orphans = used - HAND_WRITTEN - set(GENERATORS)
    assert not orphans, f"markers without a generator: {orphans}"
    assert set(GENERATORS) <= used, f"generators no document uses: {set(GENERATORS) - used}"


def test_the_refresh_replaces_only_the_blocks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    start, end = markers("variants")
    page.write_text(f"intro\n{start}| old |{end}\nrest\n")
    assert refresh([page]) == [page]
    text = page.read_text()
    assert text == f"intro\n{start}{GENERATORS['variants']()}{end}\nrest\n"
    assert refresh([page]) == []  # current now: nothing to write


def test_an_empty_block_is_filled_and_read_back() -> None:
    # An emptied block keeps only the start marker's newline before its end marker.
    empty = "intro\n<!-- t:start -->\n<!-- t:end -->\noutro\n"
    filled = replace_block(empty, markers("t"), "| a |")
    assert (block(empty, markers("t")), block(filled, markers("t"))) == ("", "| a |")
    assert filled.startswith("intro\n") and filled.endswith("\noutro\n")


def test_the_layering_table_follows_the_rules() -> None:
    folders = ("cli", "engine", "image", "common")
    forbidden = {"cli": ("pudev.image",), "engine": ("pudev.cli", "pudev.image"),
                 "image": ("pudev.cli", "pudev.engine", "pudev.paths"),
                 "common": ("pudev.cli", "pudev.engine", "pudev.image", "pudev.paths")}
    assert layering_markdown(folders, forbidden).splitlines()[2:] == [
        "| `cli/` | all but `image/` | none |",
        "| `engine/` | `common/` | `cli/` |",
        "| `image/` | `common/`; not `pudev.paths` | none |",
        "| `common/` | none; not `pudev.paths` | `cli/`, `engine/`, `image/` |",
    ]


def test_the_build_table_shows_every_sample_behind_a_median_and_what_users_pull_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import docs_tables

    def run(cold_samples: list[float]) -> dict[str, object]:
        cold = {"scenario": "cold", "seconds": sorted(cold_samples)[1], "ratio": 0.5, "rebuilt": [],
                "probe": "", "download_bytes": 510_000_000, "samples": cold_samples}
        naive = {"scenario": "naive", "seconds": 80.0, "ratio": 1.0, "rebuilt": [], "probe": "",
                 "download_bytes": 0, "samples": [80.0]}
        pin = {"scenario": "pin-the-rest", "seconds": 6.0, "ratio": 0.15, "rebuilt": [], "probe": "tqdm 4.66.0",
               "download_bytes": 42_000_000, "samples": [6.4, 5.9, 6.0]}
        return {"measured_at": "2026-12-05T04:00:00+0000", "image": "pudev-local/pytorch-universal-dev:cuX",
                "scenarios": [naive, cold, pin], "targets": {"cold": 0.8},
                "download_targets_mb": {"pin-the-rest": 80.0}, "own_layers_bytes": [300_000_000, 200_000_000],
                "own_layers_target_mb": 520.0}

    monkeypatch.setattr(docs_tables, "_build_runs",
                        lambda: {profile: run([45.6, 32.0, 40.1]) for profile in docs_tables.BUILD_PROFILES})
    table = docs_tables.build_speed()
    assert "40.1 s, 50.0% (median of 32.0, 40.1, 45.6 s); 510 MB pulled again" in table
    assert "| 80.0 s |" in table  # one sample: no median to explain, nothing pulled
    assert "a pin changed in the rest of the packages (tqdm)" in table and "42 MB pulled again" in table
    assert "<= 80 MB pulled" in table and "<= 80%" in table
    assert "| the image's own layers, compressed | 500 MB |" in docs_tables.build_sizes()


SAME_IN_CHINESE = {"torch", "CUDA", "Python", "amd64 GPU", "arm64 GPU"}


def _cells(table: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()]


@pytest.mark.parametrize(("english", "chinese"), [("variants", "variants-zh"), ("tags", "tags-zh")])
def test_a_chinese_page_renders_the_same_matrix_in_chinese(english: str, chinese: str) -> None:
    """The Chinese table holds the English one's rows, from the matrix, under Chinese headers and with
    Chinese words and punctuation where the English cells have words."""
    ours, theirs = _cells(GENERATORS[english]()), _cells(GENERATORS[chinese]())
    assert len(ours) == len(theirs) and all(len(a) == len(b) for a, b in zip(ours, theirs, strict=True))
    # A header is Chinese, or a name that reads the same in Chinese.
    untranslated = [header for header in theirs[0] if not any("\u4e00" <= char <= "\u9fff" for char in header)
                    and header not in SAME_IN_CHINESE]
    assert not untranslated, f"the {chinese} table's headers are English: {untranslated}"
    # Versions are the matrix's own values: the same in both languages (the variants' platform, torch, CUDA
    # and Python; the tags' torch and CUDA).
    same = slice(1, 5) if english == "variants" else slice(1, 3)
    assert [row[same] for row in ours[2:]] == [row[same] for row in theirs[2:]]
    body = "\n".join("|".join(row) for row in theirs[2:])
    for word in (" to ", "wheels from", "default index", " (latest)", "full support", "| no |", "; "):
        assert word not in body, f"the {chinese} table still says {word!r}"


def test_the_chinese_variant_table_translates_each_note() -> None:
    from pudev.config.loader import load_matrix
    from pudev.config.variant_table import HEADERS, VARIANT_HEADERS_ZH, variants_markdown_zh
    from pudev.paths import VARIANTS_FILE

    assert set(VARIANT_HEADERS_ZH) == set(HEADERS), "each column of the variant table needs its Chinese header"
    table = variants_markdown_zh(load_matrix(VARIANTS_FILE))
    assert table.startswith("| 变体 | 平台 | torch | CUDA | Python | 基础镜像 |")
    if "wheels" in GENERATORS["variants"]():
        assert "的 wheel（取自 https://" in table  # an arm64 build from torch's wheels  # noqa: RUF001
    assert "（latest）" in table  # noqa: RUF001


@pytest.mark.parametrize("zstd", [480_000_000, 539_000_000])
def test_the_download_table_marks_own_layers_over_their_budget(zstd: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import docs_tables

    data = {"variant": "cu132", "measured_at": "2026-12-08T02:28:30+0000", "zstd": "zstd's default level",
            "budget_bytes": 500_000_000, "own_layers": [{"step": "RUN x", "gzip": 600_000_000, "zstd": zstd}],
            "own_bytes": {"gzip": 600_000_000, "zstd": zstd}, "base_bytes": {"gzip": 3, "zstd": 2}}
    monkeypatch.setattr(docs_tables, "_benchmark", lambda _name: data)
    assert ("**over**" in docs_tables.download_size()) == (zstd > 500_000_000)
