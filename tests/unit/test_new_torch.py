"""`pudev new-torch`: the move a torch release makes to the matrix, decided from the index's and the
registry's answers alone (here given; tests/e2e/test_release_day.py asks the real index and a registry)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pudev.config.loader import load_matrix
from pudev.devtools.new_torch import Answers, Move, changelog_entries, decide, follow_standins, unified_diff, validate
from pudev.devtools.torch_releases import IndexBuild
from pudev.paths import REPO_ROOT, STANDINS_FILE, VARIANTS_FILE

FIXTURES = REPO_ROOT / "tests/fixtures/new-torch"
# The matrix the day before torch 2.15.0 moved in (cu126 and cu132 on 2.14.1), and the diff of that move.
BEFORE = FIXTURES / "variants-2.14.1.toml"
NVIDIA_TAGS = ("12.9.1-devel-ubuntu24.04", "13.0.2-devel-ubuntu24.04", "13.0.3-devel-ubuntu24.04",
               "13.0.3-cudnn-runtime-ubuntu24.04", "13.2.1-devel-ubuntu24.04", "13.2.1-cudnn-runtime-ubuntu24.04",
               "13.5.0-devel-ubuntu24.04", "13.5.0-runtime-ubuntu24.04", "13.10.0-devel-ubuntu22.04")
OFFICIAL = {"13.0": "2.15.0-cuda13.0-cudnn9-runtime", "13.2": "2.15.0-cuda13.2-cudnn9-runtime"}


def _answers(**changes: object) -> Answers:
    return Answers(**{"torch": "2.15.0", "index_cuda": "13.2", "official": OFFICIAL, "cuda_tags": NVIDIA_TAGS,
                      "torchvision": "0.29.2", **changes})  # type: ignore[arg-type]


def test_the_move_to_2_15_0_is_the_diff_a_maintainer_reviews() -> None:
    move = decide(BEFORE.read_text(), _answers())
    assert move.summary == "ready 2.15.0: moves cu132; adds cu130; keeps cu126 on 2.14.1"
    assert (move.moved, move.added, move.stayed, move.latest) == (("cu132",), ("cu130",), ("cu126",), "cu132")
    assert move.toolkits_added == ("13.0", "13.5")  # torch's own new CUDA, and NVIDIA's newest 13.x
    expected = (FIXTURES / "variants-2.15.0.diff").read_text()
    assert unified_diff("docker/variants.toml", BEFORE.read_text(), move.text) == expected


def test_the_moved_matrix_loads_and_keeps_what_the_release_did_not_touch(tmp_path: Path) -> None:
    move = decide(BEFORE.read_text(), _answers())
    new, old = validate(move.text, tmp_path / "variants.toml"), load_matrix(BEFORE)
    assert new.variants["cu130"].base_image == "pytorch/pytorch:2.15.0-cuda13.0-cudnn9-runtime"
    arm = new.builds["cu130"]["linux/arm64"]
    assert (arm.base_image, arm.torch_index) == ("nvidia/cuda:13.0.3-cudnn-runtime-ubuntu24.04",
                                                 "https://download.pytorch.org/whl/cu130")
    for name in ("cu118", "cu121", "cu126"):
        assert new.variants[name] == old.variants[name] or name == old.default_variant
    assert new.default_variant == "cu132" and new.variants["cu126"].torch == "2.14.1"


@pytest.mark.parametrize(("answers", "status"), [
    (_answers(torch="2.14.1"), "current"),
    (_answers(torch="2.13.0"), "current"),
    (_answers(official={}), "waiting"),
])
def test_nothing_moves_before_the_release_has_its_official_images(answers: Answers, status: str) -> None:
    move = decide(BEFORE.read_text(), answers)
    assert move.status == status and move.text == ""
    assert move.summary.startswith(f"{status} {answers.torch}")
    if status == "waiting":
        assert "pytorch/pytorch has no 2.15.0-cuda*-runtime tag" in move.summary


def test_latest_stays_where_the_index_build_has_no_official_image() -> None:
    move = decide(BEFORE.read_text(), _answers(index_cuda="13.4"))
    assert move.latest == "cu126"
    assert any("CUDA 13.4 build" in note and "latest stays cu126" in note for note in move.notes)


def test_today_the_newest_line_is_current() -> None:
    """The real matrix already holds what the index gives: the daily check finds nothing to do."""
    matrix = load_matrix(VARIANTS_FILE)
    newest = max((variant.torch for variant in matrix.variants.values()), key=lambda v: tuple(map(int, v.split("."))))
    assert decide(VARIANTS_FILE.read_text(), _answers(torch=newest)).status == "current"


def test_a_release_the_rule_matrix_moves_keeps_its_toolkits_derived(tmp_path: Path) -> None:
    """Today's matrix names no toolkits for the newest line: a move edits torch and the bases alone."""
    official = {"13.2": "2.16.0-cuda13.2-cudnn9-runtime", "13.6": "2.16.0-cuda13.6-cudnn9-runtime"}
    tags = (*NVIDIA_TAGS, "13.6.0-devel-ubuntu24.04", "13.6.0-cudnn-runtime-ubuntu24.04")
    move = decide(VARIANTS_FILE.read_text(), _answers(torch="2.16.0", official=official, cuda_tags=tags,
                                                      index_cuda="13.6"))
    assert (move.moved, move.added, move.stayed, move.latest) == (("cu132",), ("cu136",), ("cu130",), "cu136")
    new = validate(move.text, tmp_path / "variants.toml")
    assert new.variants["cu132"].toolkit_versions == ("13.2", "13.6")  # the rule follows the new newest 13.x
    assert new.variants["cu136"].toolkit_versions == ("13.5", "13.6")  # the newest other 13.x
    diff = unified_diff("docker/variants.toml", VARIANTS_FILE.read_text(), move.text)
    assert "toolkits =" not in "".join(line for line in diff.splitlines(keepends=True) if line.startswith("+"))


def test_the_stand_ins_of_a_moved_variant_follow_the_release() -> None:
    """The profile that stands in for a moved variant builds the release too: its PyTorch stand-in is renamed
    and pinned to the release and the torchvision that requires it; no other stand-in changes."""
    text = STANDINS_FILE.read_text()
    matrix = load_matrix(VARIANTS_FILE)
    newest = max((v.torch for v in matrix.variants.values()), key=lambda v: tuple(map(int, v.split("."))))
    moved = tuple(name for name, v in matrix.variants.items() if v.torch == newest)
    move = Move("ready", newest, "9.9.0", moved=moved)
    after, renamed = follow_standins(text, move, IndexBuild("9.9.0", "13.2", "0.99.0"))
    assert renamed, "no stand-in followed the newest line"
    changed = [line for line in unified_diff("standins.toml", text, after).splitlines()
               if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert changed and all("9.9.0-cuda13.2" in line or newest in line or "0.99.0" in line for line in changed)
    assert 'TORCH_VERSION = "9.9.0"' in after and 'TORCHVISION_VERSION = "0.99.0"' in after
    untouched = Move("ready", newest, "9.9.0", moved=())
    assert follow_standins(text, untouched, IndexBuild("9.9.0", "13.2", "0.99.0")) == (text, [])


def test_the_changelog_entry_says_what_each_tag_moved_to(tmp_path: Path) -> None:
    move = decide(BEFORE.read_text(), _answers())
    old, new = load_matrix(BEFORE), validate(move.text, tmp_path / "variants.toml")
    entries = {key.split(" toolkits")[0]: text for key, text in changelog_entries(old, new, date="2026-12-05")}
    assert set(entries) == {"cu132 torch 2.15.0", "cu130 torch 2.15.0"}  # cu126 holds what it held
    cu132 = entries["cu132 torch 2.15.0"]
    rows = {line.split("|")[1].strip(): line for line in cu132.splitlines() if line.startswith("| `")}
    assert set(rows) == {"`cu132`", "`latest`"}
    assert "2.14.1 → **2.15.0**" in rows["`cu132`"] and "12.6 + 13.2" in rows["`cu132`"]
    # latest moves from cu126: another variant, CUDA and driver; the entry says so, with the way back.
    assert "cu126 → **cu132**" in rows["`latest`"] and "12.6 → **13.2**" in rows["`latest`"]
    assert "≥ 525.60.13" in rows["`latest`"] and "≥ 580" in rows["`latest`"]
    assert "pull `cu126` instead" in cu132 and "`2.14.1-cu132-py3.12`, stays where it is" in cu132
    assert "(new)" in entries["cu130 torch 2.15.0"] and "listed once the images are published" in cu132
