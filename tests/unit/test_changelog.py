"""CHANGELOG.md entries: built from two images' manifests (what `pudev manifest --diff` compares), keyed,
so the entry written from the matrix on release day is replaced by the one read from the published images.
An entry goes only into a changelog pudev writes (a byte-order mark, blank lines and comments before its
title are kept) or a new file: any other file is left byte for byte as it was."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_support import fails

from pudev.cli import main
from pudev.cli.commands import HANDLERS
from pudev.cli.parser import build_parser
from pudev.common.errors import PudevError
from pudev.paths import REPO_ROOT
from pudev.reports import changelog
from pudev.reports.changelog import HEADER, from_manifests, is_changelog, with_entry


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
    ("--out", "{tmp}/binary.md", ("binary.md", "--out", "changelog")),
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


def _files(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def _manifest_files(folder: Path) -> tuple[Path, Path]:
    """NEW_132 after OLD_132, as the JSON files `pudev manifest` writes, in a folder of their own."""
    (folder / "manifests").mkdir()
    paths = folder / "manifests" / "old.json", folder / "manifests" / "new.json"
    for path, manifest in zip(paths, (OLD_132, NEW_132), strict=True):
        path.write_text(json.dumps(manifest))
    return paths


def test_out_readme_leaves_the_readme_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`pudev changelog --out README.md` in a copy of the repository's README: refused in one line naming the
    file, --out and the fix; README.md keeps every byte, and nothing else is written beside it."""
    readme = tmp_path / "README.md"
    readme.write_bytes((REPO_ROOT / "README.md").read_bytes())
    old, new = _manifest_files(tmp_path)
    before = _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    line = fails(["changelog", str(new), "--before", str(old), "--date", "2026-12-22", "--out", "README.md"], capsys)
    assert "README.md" in line and "--out" in line and "changelog" in line, line
    assert re.search(r"new (path|file)", line), line  # the fix: another path
    assert readme.read_bytes() == (REPO_ROOT / "README.md").read_bytes()
    assert _files(tmp_path) == before


def test_the_readme_is_no_changelog_and_is_never_rewritten_as_one() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    assert not is_changelog(readme)
    assert is_changelog((REPO_ROOT / "CHANGELOG.md").read_text())  # the project's own is one, whatever it holds
    with pytest.raises(PudevError) as refused:
        with_entry(readme, "k", "<!-- changelog: k -->\n## K\n", source="--out README.md", fix="name a new file")
    message = str(refused.value)
    assert "\n" not in message and "--out README.md" in message and "name a new file" in message


FOREIGN = {
    "a README": "# pudev\n\nBuild images.\n",
    "another project's changelog": "# Changelog\n\nAll notable changes to this project.\n\n## [1.0.0]\n- first\n",
    "a title after text": "Notes\n\n# Changelog\n<!-- changelog: a -->\n## a\n",
    "a title mid-line after a comment": "<!-- c --> # Changelog\n<!-- changelog: a -->\n## a\n",
    "a comment never closed": "<!-- c\n# Changelog\n<!-- changelog: a -->\n## a\n",
    "an indented title": "  # Changelog\n<!-- changelog: a -->\n## a\n",
    "another title": "# CHANGELOG\n<!-- changelog: a -->\n## a\n",
    "empty": "",
}
PREAMBLES = {"a byte-order mark": "\ufeff", "blank lines": "\n\n", "a blank line with spaces": "  \t\r\n",
             "an HTML comment": "<!-- keep this:\n  two lines -->\n",
             "all of them": "\ufeff\n<!-- a -->\n\n<!-- b -->\n"}


@pytest.mark.parametrize("text", FOREIGN.values(), ids=FOREIGN.keys())
def test_what_is_not_a_changelog_pudev_writes(text: str) -> None:
    assert not is_changelog(text)


def _changelog(*keys: str) -> str:
    text = ""
    for key in keys:
        text = with_entry(text, key, f"<!-- changelog: {key} -->\n## {key}\n\nabout {key}\n")
    return text


@pytest.mark.parametrize("preamble", PREAMBLES.values(), ids=PREAMBLES.keys())
def test_a_changelog_is_recognised_past_what_precedes_its_title(preamble: str) -> None:
    assert is_changelog(_changelog("a", "b"))
    assert is_changelog(preamble + _changelog("a", "b"))
    assert is_changelog(preamble + HEADER) and is_changelog(preamble + "# Changelog\n")


@pytest.mark.parametrize("preamble", PREAMBLES.values(), ids=PREAMBLES.keys())
def test_an_entry_keeps_what_precedes_the_title_and_every_earlier_entry(preamble: str, tmp_path: Path) -> None:
    """The 38 lines that became 19: the earlier entries, and the BOM, blank lines or comment before the title."""
    earlier = preamble + _changelog("first", "second", "third")
    out = tmp_path / "CHANGELOG.md"
    out.write_bytes(earlier.encode())
    old, new = _manifest_files(tmp_path)
    args = ["changelog", str(new), "--before", str(old), "--date", "2026-12-22", "--out", str(out)]
    for _ in range(2):  # a new entry, then the same one replaced in place
        assert main(args) == 0
        written = out.read_bytes().decode()
        assert written.startswith(preamble + "# Changelog\n"), written[:80]
        assert all(f"about {key}" in written for key in ("first", "second", "third")), written
        assert written.count("<!-- changelog: cu132 torch 2.15.0 ") == 1
        assert written.index("cu132 torch 2.15.0") < written.index("about third")  # newest first
        assert len(written.splitlines()) > len(earlier.splitlines())


def test_a_blank_file_starts_a_changelog() -> None:
    assert with_entry("", "a", "<!-- changelog: a -->\n## A\n").startswith(HEADER)
    assert with_entry("\ufeff\n", "a", "<!-- changelog: a -->\n## A\n").startswith("\ufeff" + HEADER)


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_date_is_an_error_naming_the_flag_and_the_format(empty: str) -> None:
    with pytest.raises(PudevError) as refused:
        changelog.checked_date(empty, "--date")
    assert "--date" in str(refused.value) and "YYYY-MM-DD" in str(refused.value)


def test_the_command_refuses_an_empty_date_and_writes_nothing(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    old, new = _manifest_files(tmp_path)
    out = tmp_path / "CHANGELOG.md"
    out.write_text(_changelog("first"))
    before = _files(tmp_path)
    line = fails(["changelog", str(new), "--before", str(old), "--date", "", "--out", str(out)], capsys)
    assert "--date" in line, line
    assert _files(tmp_path) == before


def _changelog_flags() -> set[str]:
    """The flags `pudev changelog` has, read from the parser itself."""
    (commands,) = [action for action in build_parser(HANDLERS, "pudev")._actions
                   if isinstance(action, argparse._SubParsersAction)]
    return {flag for action in commands.choices["changelog"]._actions for flag in action.option_strings}


def test_manifest_errors_name_the_changelogs_own_argument(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"image": "x"}')
    for source in ("AFTER", "--before"):
        with pytest.raises(PudevError) as refused:
            changelog.read_manifest_argument(str(bad), source)
        message = str(refused.value)
        assert f"from {source})" in message and "bad.json" in message and "pudev manifest" in message
        assert "--diff" not in message


def test_an_image_that_is_not_here_names_the_argument_and_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pudev.engine.docker.inspect_image", lambda ref: None)  # the engine has no such image
    with pytest.raises(PudevError) as refused:
        changelog.read_manifest_argument("ghcr.io/org/dev@sha256:" + "a" * 64, "--before")
    message = str(refused.value)
    assert message.startswith("--before: ") and "docker pull ghcr.io/org/dev@sha256:" in message, message


@pytest.mark.parametrize("case", ["AFTER not a manifest", "--before not a manifest", "--before missing",
                                  "--date not a date", "--date empty", "--out a folder", "--out a README"])
def test_every_error_names_only_flags_the_command_has(case: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """No `--diff` (that is `pudev manifest`'s): each flag an error line names is one `pudev changelog` has."""
    old, new = _manifest_files(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"image": "x"}')
    (tmp_path / "README.md").write_text("# pudev\n")
    after, before, date, out = str(new), str(old), "2026-12-22", str(tmp_path / "CHANGELOG.md")
    if case.startswith("AFTER"):
        after = str(bad)
    elif case.startswith("--before"):
        before = str(bad) if "manifest" in case else str(tmp_path / "gone.json")
    elif case.startswith("--date"):
        date = "" if "empty" in case else "22/12/2026"
    else:
        out = str(tmp_path) if "folder" in case else str(tmp_path / "README.md")
    line = fails(["changelog", after, "--before", before, "--date", date, "--out", out], capsys)
    assert case.split()[0] in line, line  # the argument or flag at fault
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))
    assert named <= _changelog_flags(), (named, line)
