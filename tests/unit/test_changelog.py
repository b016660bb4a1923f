"""CHANGELOG.md entries: built from two images' manifests (what `pudev manifest --diff` compares), keyed,
so the entry written from the matrix on release day is replaced by the one read from the published images."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import fails

from pudev.cli import main
from pudev.reports.changelog import HEADER, from_manifests, with_entry


def _manifest(variant: str, torch: str, cuda: str, toolkits: list[str], pip: dict[str, str], *,
              latest: bool = False, dpkg: dict[str, str] | None = None) -> dict[str, Any]:
    return {"image": f"example/dev:{variant}", "pip": [{"name": n, "version": v} for n, v in pip.items()],
            "dpkg": [{"name": n, "version": v} for n, v in (dpkg or {}).items()], "conda": None,
            "labels": {"org.pudev.latest": "true" if latest else "false",
                       "org.pudev.platforms": "linux/amd64,linux/arm64"},
            "record": {"variant": variant, "torch": torch, "cuda": cuda,
                       "toolkits": [{"version": version} for version in toolkits]}}


OLD_132 = _manifest("cu132", "2.14.1", "13.2", ["12.6", "13.2"],
                    {"torch": "2.14.1", "numpy": "2.3.0", "tqdm": "4.67.1", "six": "1.16.0"}, dpkg={"zsh": "5.9-6"})
OLD_126 = _manifest("cu126", "2.14.1", "12.6", ["12.6", "13.2"], {"torch": "2.14.1"}, latest=True)
NEW_132 = _manifest("cu132", "2.15.0", "13.2", ["13.2", "13.5"],
                    {"torch": "2.15.0", "numpy": "2.4.1", "tqdm": "4.60.0", "jedi": "0.20.1"}, latest=True,
                    dpkg={"zsh": "5.9-6"})


def test_an_entry_lists_each_tag_and_the_packages_behind_it() -> None:
    found = from_manifests(NEW_132, [OLD_132, OLD_126], date="2026-12-22")
    assert found is not None
    key, text = found
    assert key == "cu132 torch 2.15.0 toolkits 13.2+13.5"
    assert text.startswith(f"<!-- changelog: {key} -->\n## 2026-12-22: `cu132`, torch 2.15.0 with CUDA 13.2")
    assert "| `cu132` |" in text and "| `latest` |" in text
    assert "12.6 + 13.2 → **13.2 + 13.5**" in text and "≥ 580 (full support: ≥ 595.45.04)" in text
    cu132 = text.split("Packages behind `cu132`:")[1].split("Packages behind")[0]
    assert "pip, up (2): numpy 2.3.0 → 2.4.1, torch 2.14.1 → 2.15.0" in cu132
    assert "pip, down (1): tqdm 4.67.1 → 4.60.0" in cu132
    assert "pip, added (1): jedi 0.20.1" in cu132 and "pip, removed (1): six 1.16.0" in cu132
    assert "dpkg" not in cu132  # unchanged sections are left out
    latest = text.split("Packages behind `latest`:")[1]
    assert "cu126 → **cu132**" in text and "torch 2.14.1 → 2.15.0" in latest


def test_a_tag_none_of_the_earlier_images_carried_is_new() -> None:
    found = from_manifests(NEW_132, [OLD_132], date="2026-12-22")
    assert found is not None
    assert "| `latest` (new) |" in found[1] and "Packages behind `latest`" not in found[1]


def test_a_republish_with_new_packages_alone_writes_no_entry() -> None:
    """Every merge republishes; the changelog announces a tag that moved to another torch, CUDA or toolkit."""
    again = {**NEW_132, "pip": [{"name": "numpy", "version": "2.5.0"}]}
    assert from_manifests(again, [NEW_132], date="2026-12-23") is None


def test_an_entry_replaces_the_one_of_its_key_and_a_new_key_goes_first() -> None:
    first = with_entry("", "a", "<!-- changelog: a -->\n## A\n\nold a\n")
    assert first.startswith(HEADER) and first.endswith("old a\n")
    two = with_entry(first, "b", "<!-- changelog: b -->\n## B\n")
    assert two.index("## B") < two.index("## A")
    replaced = with_entry(two, "a", "<!-- changelog: a -->\n## A\n\nnew a\n")
    assert "old a" not in replaced and "new a" in replaced and replaced.index("## B") < replaced.index("## A")
    assert replaced.count("<!-- changelog:") == 2


def test_the_command_writes_the_entry_from_manifest_files(tmp_path: Path) -> None:
    files = {}
    for name, manifest in (("old", OLD_132), ("new", NEW_132)):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(manifest))
    out = tmp_path / "CHANGELOG.md"
    args = ["changelog", str(files["new"]), "--before", str(files["old"]), "--date", "2026-12-22", "--out", str(out)]
    assert main(args) == 0
    assert main(args) == 0  # again: the same entry, replaced in place
    text = out.read_text()
    assert text.count("<!-- changelog: cu132 torch 2.15.0 ") == 1 and "numpy 2.3.0 → 2.4.1" in text


def test_a_file_that_is_no_manifest_is_one_line_naming_it(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"image": "x"}')
    assert main(["changelog", str(bad), "--out", "-"]) != 0
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "bad.json" in error and "AFTER" in error and "pudev manifest" in error


@pytest.mark.parametrize(("flag", "value", "names"), [
    ("--date", "2026-13-45", ("--date 2026-13-45", "not a date", "YYYY-MM-DD")),
    ("--date", "22/12/2026", ("--date 22/12/2026", "not a date")),
    ("--out", "{tmp}", ("--out", "a folder, not a file")),
    ("--out", "{tmp}/missing/CHANGELOG.md", ("--out", "no folder", "create it")),
    ("--out", "{tmp}/binary.md", ("binary.md", "--out", "not UTF-8")),
])
def test_a_bad_flag_is_one_line_and_nothing_is_written(flag: str, value: str, names: tuple[str, ...],
                                                       tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Checked before the manifests are read: the entry never lands in a wrong heading or a wrong file."""
    (tmp_path / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    new = tmp_path / "new.json"
    new.write_text(json.dumps(NEW_132))
    before = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    out = ["--out", str(tmp_path / "CHANGELOG.md")] if flag != "--out" else []
    line = fails(["changelog", str(new), flag, value.format(tmp=tmp_path), *out], capsys)
    assert all(name in line for name in names), line
    assert {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()} == before
