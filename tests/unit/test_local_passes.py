"""The store of suite halves that passed on this machine, by image id (pudev/testing/localpasses.py), and
`pudev test --reuse-local-pass`'s bad input. The e2e release tests use the flag on a real candidate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import fails

from pudev.testing import localpasses

IMAGE = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32
PASS = {"passed": 40, "failed": 0, "skipped": 0}


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(localpasses.STATE_VARIABLE, str(tmp_path / "state"))
    return tmp_path / "state"


def test_a_remembered_pass_is_recalled_for_that_image_and_half_only() -> None:
    localpasses.remember(IMAGE, "cpu", PASS)
    found = localpasses.recall(IMAGE, "cpu")
    assert found is not None and (found.image_id, found.half, found.counts) == (IMAGE, "cpu", PASS)
    assert found.tested_at.endswith("Z")
    assert localpasses.recall(IMAGE, "gpu") is None
    assert localpasses.recall(OTHER, "cpu") is None


def test_halves_of_one_image_are_kept_side_by_side() -> None:
    localpasses.remember(IMAGE, "cpu", PASS)
    localpasses.remember(IMAGE, "gpu", {"passed": 5, "failed": 0, "skipped": 0})
    assert localpasses.recall(IMAGE, "cpu") is not None and localpasses.recall(IMAGE, "gpu") is not None


@pytest.mark.parametrize("counts", [{"passed": 0, "failed": 0, "skipped": 0}, {**PASS, "failed": 1},
                                    {**PASS, "skipped": 2}])
def test_counts_that_are_no_pass_are_never_recalled(counts: dict[str, int]) -> None:
    localpasses.remember(IMAGE, "cpu", counts)
    assert localpasses.recall(IMAGE, "cpu") is None


def test_a_damaged_or_foreign_file_means_nothing_is_known(state: Path) -> None:
    localpasses.remember(IMAGE, "cpu", PASS)
    path = state / "passes" / f"{IMAGE.split(':')[1]}.json"
    path.write_text("{not json")
    assert localpasses.recall(IMAGE, "cpu") is None
    # A file copied from another image's entry does not vouch for this one.
    path.write_text(json.dumps({"cpu": {"image_id": OTHER, "half": "cpu", "counts": PASS}}))
    assert localpasses.recall(IMAGE, "cpu") is None


def test_the_store_holds_no_path_or_output(state: Path) -> None:
    localpasses.remember(IMAGE, "cpu", PASS)
    (stored,) = (state / "passes").iterdir()
    assert set(json.loads(stored.read_text())["cpu"]) == {"image_id", "half", "counts", "tested_at"}


def test_only_image_ids_name_files() -> None:
    with pytest.raises(ValueError, match="not an image id"):
        localpasses.recall("../../etc/passwd", "cpu")


def test_the_state_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(localpasses.STATE_VARIABLE)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert localpasses.state_dir() == tmp_path / "xdg" / "pudev"


@pytest.mark.parametrize("argv", [["test", "cu121", "--reuse-local-pass"],
                                  ["test", "127.0.0.1:5000/x-candidates@sha256:" + "0" * 64, "--reuse-local-pass",
                                   "--junit", "report.xml"]])
def test_reuse_is_only_for_candidates_without_a_junit_report(argv: list[str],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(argv, capsys)
    assert "--reuse-local-pass: only for candidates by digest" in line
