"""`pudev new-torch`: each variant of the newest line decided on its own from the index's and the
registry's answers (here given; tests/e2e/test_release_day.py asks a package index and a registry that
behave like the real ones), the files that follow, and a move that lands whole or not at all.
Releases are counted from today's matrix (its newest torch, one minor on), whatever its shape, and a test that
needs a shape builds its own matrix, so these hold after any move, a partial one included."""

from __future__ import annotations

import difflib
import errno
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import tomllib
from matrices import synthetic, to_toml

from pudev.common.errors import PudevError
from pudev.config.loader import load_matrix
from pudev.devtools.new_torch import answers as answers_module
from pudev.devtools.new_torch import command, relock
from pudev.devtools.new_torch.answers import Answers, IndexBuild
from pudev.devtools.new_torch.matrix_edit import edit_matrix
from pudev.devtools.new_torch.pages_edit import RUN_DEFINITIONS, with_default_image
from pudev.devtools.new_torch.readiness import Plan, decide
from pudev.devtools.new_torch.standins_edit import edit_standins, needed_toolkits
from pudev.devtools.new_torch.transaction import JOURNAL, TOUCHED, step
from pudev.paths import REPO_ROOT, STANDINS_FILE, VARIANTS_FILE
from pudev.reports.changelog import TagState, entry_for

FIXTURES = REPO_ROOT / "tests/fixtures/new-torch"
# The matrix the day before torch 2.15.0 moved in (cu126 and cu132 on 2.14.1), and the diff of that move.
BEFORE = FIXTURES / "variants-2.14.1.toml"
BOTH = ("linux/amd64", "linux/arm64")
NVIDIA = ("12.9.1-devel-ubuntu24.04", "13.0.2-devel-ubuntu24.04", "13.0.3-devel-ubuntu24.04",
          "13.0.3-cudnn-runtime-ubuntu24.04", "13.2.1-devel-ubuntu24.04", "13.2.1-cudnn-runtime-ubuntu24.04",
          "13.5.0-devel-ubuntu24.04", "13.5.0-runtime-ubuntu24.04", "13.10.0-devel-ubuntu22.04")


def _release(version: str) -> tuple[int, ...]:
    return tuple(map(int, version.split(".")))


def _newest_line(data: dict[str, Any]) -> tuple[str, list[str], list[str]]:
    """The newest torch, the variants on it (oldest CUDA first) and their CUDAs: one or several, whichever
    the matrix has (on release day, one may have moved while the others wait on the torch before)."""
    variants = data["variants"]
    newest = max((str(table["torch"]) for table in variants.values()), key=_release)
    line = sorted((name for name, table in variants.items() if table["torch"] == newest),
                  key=lambda name: _release(str(variants[name]["cuda"])))
    return newest, line, [str(variants[name]["cuda"]) for name in line]


def _new_cuda(data: dict[str, Any], major: str) -> str:
    """A CUDA of `major` that neither a variant nor the toolkit catalogue has yet: one minor past the newest."""
    known = [*data["toolkits"], *(str(table["cuda"]) for table in data["variants"].values())]
    return f"{major}.{max(_release(v)[1] for v in known if v.split('.')[0] == major) + 1}"


# Releases are counted from today's matrix, whatever its shape: its newest torch, one minor on. A test that
# needs a shape of its own (two CUDAs on one torch, `latest` among them) builds its matrix itself.
TODAY = tomllib.loads(VARIANTS_FILE.read_text())
NEWEST, LINE, CUDAS = _newest_line(TODAY)
NEXT = f"{NEWEST.split('.')[0]}.{int(NEWEST.split('.')[1]) + 1}.0"
# What `pip install torch` gives: latest's CUDA, so `latest` stays where it is unless a test moves it.
DEFAULT_CUDA = str(TODAY["variants"][TODAY["default_variant"]]["cuda"])
# Whether a stand-in profile builds a variant of the line, so a move of the line moves the profile too (not where
# latest waits on the torch before, the line moved without it).
PROFILED = any(table["variant"] in LINE for table in tomllib.loads(STANDINS_FILE.read_text())["profiles"].values())
MAJOR = CUDAS[-1].split(".")[0]
PYTHON = str(TODAY["variants"][LINE[-1]].get("python", TODAY.get("python", "3.12")))
# Two CUDAs on one torch (3.1.0), latest the newer: the shape a test of a drop or a staggered move needs.
TWO = to_toml(synthetic())


def _answers(torch: str, cudas: list[str], *, pushed: list[str] | None = None, default: str = "",
             tags: tuple[str, ...] = NVIDIA) -> Answers:
    """The index has `torch` for `cudas` on both platforms, `pip install torch` gives `default` (else the
    newest), and the registry has the official image of each of `pushed` (else of every one)."""
    official = {cuda: f"{torch}-cuda{cuda}-cudnn9-runtime" for cuda in (cudas if pushed is None else pushed)}
    runtime = tuple(f"{cuda}.0-cudnn-runtime-ubuntu24.04" for cuda in cudas)
    return Answers(IndexBuild(torch, default or cudas[-1], "0.99.0", "2026-12-22"),
                   frozenset((cuda, platform) for cuda in cudas for platform in BOTH), official, (*tags, *runtime))


def _moved(text: str, answers: Answers) -> tuple[Plan, str]:
    plan = decide(tomllib.loads(text), answers)
    return plan, edit_matrix(text, plan, answers).text if plan.status == "ready" else text


def _latest_on_newest(tmp_path: Path) -> tuple[str, str]:
    """Today's matrix and stand-ins with `latest` on the newest torch: today's files where it is there already,
    else as the run that moves it once its official image is out leaves them (release day, mid-move)."""
    text, standins = VARIANTS_FILE.read_text(), STANDINS_FILE.read_text()
    latest = TODAY["default_variant"]
    if TODAY["variants"][latest]["torch"] == NEWEST:
        return text, standins
    cuda = str(TODAY["variants"][latest]["cuda"])
    answers = _answers(NEWEST, [cuda])
    plan, moved = _moved(text, answers)
    assert plan.named("ready") == (latest,), plan.summary
    (tmp_path / "latest.toml").write_text(moved)
    return moved, edit_standins(standins, plan, answers.build, load_matrix(tmp_path / "latest.toml"), {})


def _stand_in_torch(data: dict[str, Any], profile: dict[str, Any]) -> str:
    """The torch a stand-in profile installs: its own pin, else its PyTorch stand-in's."""
    stand_in = next(t for t in data["pytorch"].values() if t["image"] == profile["base_image"])
    return str(profile.get("torch", stand_in["args"]["TORCH_VERSION"]))


def test_the_move_to_2_15_0_is_the_diff_a_maintainer_reviews() -> None:
    answers = _answers("2.15.0", ["13.0", "13.2"], tags=NVIDIA)
    plan, text = _moved(BEFORE.read_text(), answers)
    assert plan.summary == "ready 2.15.0: moves cu132, cu130 (new); drops cu126; latest cu126 → cu132"
    assert [d.line.split(":")[0:2] for d in plan.decisions] == [["cu126", " dropped on torch 2.14.1"],
                                                                ["cu132", " ready on torch 2.14.1"],
                                                                ["cu130 (new)", " ready"]]
    assert "torch's index has no CUDA 12.6 build" in plan.decisions[0].line
    diff = "".join(difflib.unified_diff(BEFORE.read_text().splitlines(True), text.splitlines(True),
                                        "a/docker/variants.toml", "b/docker/variants.toml"))
    assert diff == (FIXTURES / "variants-2.15.0.diff").read_text()


@pytest.mark.parametrize("matrix", ["today", "two CUDAs"])
def test_images_pushed_one_at_a_time_move_one_variant_a_run_and_end_where_one_run_would(matrix: str) -> None:
    """The ordinary release day: the index has every build, the official images arrive over hours. On today's
    matrix (however many variants its newest line has) and on one whose line has two, so a run moves one
    variant while another waits, whatever today's shape."""
    today = VARIANTS_FILE.read_text() if matrix == "today" else TWO
    newest, line, cudas = _newest_line(tomllib.loads(today))
    release = f"{newest.split('.')[0]}.{int(newest.split('.')[1]) + 1}.0"
    default = DEFAULT_CUDA if matrix == "today" else cudas[-1]
    first, text = _moved(today, _answers(release, cudas, pushed=[], default=default))
    assert first.status == "waiting" and text == today
    assert all(d.status == "waiting" and f"pytorch/pytorch:{release}-cuda{d.cuda}-cudnn*-runtime" in d.line
               for d in first.decisions)
    texts = [today]
    for count in range(1, len(cudas) + 1):
        plan, moved = _moved(texts[-1], _answers(release, cudas, pushed=cudas[-count:], default=default))
        assert plan.named("ready") == (line[-count],), plan.summary
        assert set(plan.named("waiting")) == set(line[:-count]), "a variant without its image was dropped"
        variants = tomllib.loads(moved)["variants"]
        assert [variants[name]["torch"] for name in line] == [newest] * (len(line) - count) + [release] * count
        texts.append(moved)
    assert texts[-1] == _moved(today, _answers(release, cudas, default=default))[1]
    again = decide(tomllib.loads(texts[-1]), _answers(release, cudas, default=default))
    assert again.status == "current" and [d.status for d in again.decisions] == ["current"] * len(line)


def test_a_release_without_a_build_for_a_cuda_drops_that_variant_alone() -> None:
    """A line of two CUDAs (a matrix of the test's own: today's may have one), the release built for the newer
    alone: the older is dropped and stays on its torch, the newer moves, and the next run has nothing to do."""
    newest, line, cudas = _newest_line(tomllib.loads(TWO))
    answers = _answers("3.2.0", cudas[1:])
    plan, text = _moved(TWO, answers)
    assert plan.named("dropped") == (line[0],) and plan.named("ready") == tuple(line[1:]), plan.summary
    new = tomllib.loads(text)["variants"]
    assert new[line[0]]["torch"] == newest and all(new[name]["torch"] == "3.2.0" for name in line[1:])
    after = decide(tomllib.loads(text), answers)
    assert after.status == "current" and line[0] not in {d.variant for d in after.decisions}


def test_latest_follows_pip_install_torch_once_its_variant_is_on_the_release() -> None:
    """The release adds a CUDA and makes it the index's default: latest waits for that variant's image."""
    cuda = _new_cuda(TODAY, MAJOR)
    name = "cu" + cuda.replace(".", "")
    tags = (*NVIDIA, f"{cuda}.0-devel-ubuntu24.04")
    plan, text = _moved(VARIANTS_FILE.read_text(), _answers(NEXT, [*CUDAS, cuda], pushed=CUDAS, tags=tags))
    assert plan.latest == TODAY["default_variant"] and plan.named("waiting") == (name,)
    later, final = _moved(text, _answers(NEXT, [*CUDAS, cuda], tags=tags))
    assert later.named("ready") == (name,) and later.latest == name
    matrix = tomllib.loads(final)
    assert matrix["default_variant"] == name and matrix["variants"][name]["torch"] == NEXT
    assert cuda in matrix["toolkits"]


def test_a_new_toolkit_the_same_day_joins_the_rule_matrix_without_listing_toolkits(tmp_path: Path) -> None:
    newer = _new_cuda(TODAY, MAJOR)
    tags = (*NVIDIA, f"{newer}.0-devel-ubuntu24.04")
    _, text = _moved(VARIANTS_FILE.read_text(), _answers(NEXT, CUDAS, default=DEFAULT_CUDA, tags=tags))
    (tmp_path / "variants.toml").write_text(text)
    new, data = load_matrix(tmp_path / "variants.toml"), tomllib.loads(text)
    by_rule = [name for name in LINE if "toolkits" not in TODAY["variants"][name]]
    assert by_rule, "no variant of the newest line takes its toolkits by the rule"
    assert all(newer in new.variants[name].toolkit_versions for name in by_rule if name.startswith(f"cu{MAJOR}"))
    assert '[toolkits."' + newer + '"]' in text
    assert all("toolkits" not in data["variants"][name] for name in by_rule)  # none starts listing them


def test_a_version_older_or_malformed_is_refused_before_any_question(capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from cli_support import fails

    def asked(*_: object, **__: object) -> None:
        raise AssertionError("the index was asked")
    monkeypatch.setattr(answers_module, "torch_build", asked)
    assert "VERSION abc: not a torch release; write X.Y.Z" in fails(["new-torch", "abc"], capsys)
    assert f"VERSION 1.0.0: older than the newest line's torch {NEWEST}" in fails(["new-torch", "1.0.0"], capsys)
    assert "--registry bad/host: not a registry host" in fails(["new-torch", "--registry", "bad/host"], capsys)
    assert "--torch-index ftp://x: not an index URL" in fails(["new-torch", "--torch-index", "ftp://x"], capsys)


@pytest.mark.parametrize(("content", "problem"), [
    (None, "not found"), (b"", "is empty"), (b"\xff\xfe torch", "is not UTF-8"), (b"[variants\n", "not valid TOML"),
])
def test_a_bad_variants_file_is_one_line_naming_the_flag(content: bytes | None, problem: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from cli_support import fails

    path = tmp_path / "variants.toml"
    if content is not None:
        path.write_bytes(content)
    line = fails(["new-torch", "--check", "--variants-file", str(path)], capsys)
    assert problem in line and "--variants-file" in line
    assert sorted(tmp_path.iterdir()) == ([path] if content is not None else [])


def test_the_stand_in_profile_follows_latest_to_a_new_cuda_with_a_recipe_for_its_toolkit(tmp_path: Path) -> None:
    text, before = _latest_on_newest(tmp_path)
    newest, _, cudas = _newest_line(tomllib.loads(text))
    release = f"{newest.split('.')[0]}.{int(newest.split('.')[1]) + 1}.0"
    cuda = _new_cuda(tomllib.loads(text), MAJOR)
    name = "cu" + cuda.replace(".", "")
    answers = _answers(release, [*cudas, cuda], tags=(*NVIDIA, f"{cuda}.0-devel-ubuntu24.04"))
    plan, moved = _moved(text, answers)
    assert plan.latest == name, plan.summary
    (tmp_path / "variants.toml").write_text(moved)
    new = load_matrix(tmp_path / "variants.toml")
    needed = needed_toolkits(before, plan, answers.build, new)
    recipes = tomllib.loads(before)["toolkits"]
    assert cuda in needed and needed == [v for v in new.variants[name].toolkit_versions if v not in recipes]
    after = edit_standins(before, plan, answers.build, new, {v: (f"{v}.1", f"{v}.77") for v in needed})
    data = tomllib.loads(after)
    profile = next(t for t in data["profiles"].values() if t["variant"] == name)
    assert "torch" not in profile
    stand_in = next(t for t in data["pytorch"].values() if t["image"] == profile["base_image"])
    assert stand_in["args"]["TORCH_VERSION"] == release and stand_in["args"]["TORCH_CUDA"] == cuda
    named = {key.split(".", 1)[1].rsplit(".", 1)[0] for key in profile if key.startswith("toolkit.")}
    assert named == set(new.variants[name].toolkit_versions) and named <= set(data["toolkits"])
    assert "cuda-toolkit[" in data["toolkits"][cuda]["args"]["WHEELS"] and f"=={cuda}.1" in \
        data["toolkits"][cuda]["args"]["WHEELS"] and f"nvidia-nvjitlink=={cuda}.77" in \
        data["toolkits"][cuda]["args"]["WHEELS"]
    assert name in profile["lock"]


def test_the_stand_in_profile_keeps_its_torch_while_latest_waits(tmp_path: Path) -> None:
    """The line moves, the release's default CUDA (a new one) has no image yet: latest stays, and its stand-in
    profile keeps installing the torch it did (pinned where the profile did not pin it yet)."""
    text, before = _latest_on_newest(tmp_path)
    newest, _, cudas = _newest_line(tomllib.loads(text))
    release = f"{newest.split('.')[0]}.{int(newest.split('.')[1]) + 1}.0"
    answers = _answers(release, [*cudas, _new_cuda(tomllib.loads(text), MAJOR)], pushed=cudas)
    plan, _ = _moved(text, answers)
    latest = TODAY["default_variant"]
    assert plan.latest == latest and latest in plan.named("ready"), plan.summary
    (tmp_path / "variants.toml").write_text(text)
    after = edit_standins(before, plan, answers.build, load_matrix(tmp_path / "variants.toml"), {})
    old, new = tomllib.loads(before), tomllib.loads(after)
    following = [name for name, table in old["profiles"].items() if table["variant"] == latest]
    assert following, "no stand-in profile stands in for latest"
    for name in following:
        assert _stand_in_torch(new, new["profiles"][name]) == _stand_in_torch(old, old["profiles"][name])
        assert "torch" in new["profiles"][name]


def test_compose_and_the_devcontainer_name_latests_image() -> None:
    for name in RUN_DEFINITIONS:
        text = (REPO_ROOT / name).read_text()
        assert "example/dev:cu999" in with_default_image(text, "example/dev:cu999")
        assert with_default_image(text, "example/dev:cu999").count("cu999") == 1


def test_the_changelog_entry_says_what_each_tag_moved_to() -> None:
    old = TagState("cu126", "2.14.1", "12.6", ("12.6", "13.2"), BOTH, True, "3.12")
    was = TagState("cu132", "2.14.1", "13.2", ("12.6", "13.2"), BOTH, False, "3.12")
    found = entry_for(TagState("cu132", "2.15.0", "13.2", ("13.2", "13.5"), BOTH, True, "3.12"), [old, was],
                      date="2026-10-28")
    assert found is not None
    _, text = found
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| `")}
    assert set(rows) == {"`cu132`", "`latest`"} and "## 2026-10-28:" in text
    assert "2.14.1 → **2.15.0**" in rows["`cu132`"] and "cu126 → **cu132**" in rows["`latest`"]
    assert "pull `cu126` instead" in text and "`2.14.1-cu132-py3.12`, stays where it is" in text
    assert "listed once the images are published" in text


def _checkout(root: Path) -> Path:
    """A copy of what a move touches, at `root`."""
    root.mkdir()
    for name in TOUCHED:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name)
        elif source.exists():
            shutil.copy(source, root / name)
    return root


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of what a move touches, as the command's checkout."""
    root = _checkout(tmp_path / "repo")
    monkeypatch.setattr(command, "REPO_ROOT", root)
    monkeypatch.setattr(command, "ask", lambda options, data: _answers(NEXT, CUDAS, default=DEFAULT_CUDA))
    return root


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_failed_step_leaves_the_tree_as_it_was_and_a_rerun_finishes(tree: Path, capsys: pytest.CaptureFixture[str],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    before = _snapshot(tree)
    options = command.Options(variants_file=tree / "docker/variants.toml")

    def fails(_copy: Path, *args: str) -> str:
        raise PudevError("`pudev lock`: locking x.txt failed: no network")
    monkeypatch.setattr(relock, "pudev_in", fails)
    with pytest.raises(PudevError, match="stopped at the locks step, the tree is unchanged"):
        command.run(options, sys.stdout)
    assert _snapshot(tree) == before
    asked: list[tuple[str, ...]] = []
    def records(_copy: Path, *args: str) -> str:
        asked.append(args)
        return ""
    monkeypatch.setattr(relock, "pudev_in", records)
    assert command.run(options, sys.stdout) == 0
    out = capsys.readouterr().out
    after = _snapshot(tree)
    moved = tomllib.loads(after["docker/variants.toml"].decode())
    assert all(moved["variants"][name]["torch"] == NEXT for name in LINE)
    assert "wrote CHANGELOG.md" in out and f"torch {NEXT}" in after["CHANGELOG.md"].decode()
    assert "## 2026-12-22:" in after["CHANGELOG.md"].decode()  # the index's upload day, not the clock's
    assert any(args[:2] == ("lock", "--profile") for args in asked) == PROFILED
    assert {args[args.index("--platform") + 1] for args in asked} == set(BOTH)
    assert not any(NEWEST in name for name in after if name.startswith("requirements/lock/torch"))
    assert any(NEXT in name for name in after if name.startswith("requirements/lock/torch"))
    assert not any(name.endswith(".new-torch") for name in after)  # no staged file left behind


def test_a_step_names_itself_in_its_error() -> None:
    def broken() -> None:
        raise PudevError("no cuda-toolkit==13.9.* wheels yet; rerun once NVIDIA has published them")
    with pytest.raises(PudevError) as raised:
        step("stand-ins", broken)
    assert "stand-ins step, the tree is unchanged" in str(raised.value) and "rerun" in str(raised.value)


def test_the_dry_run_makes_the_whole_move_and_writes_nothing(tree: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file the move would write or remove is named, locks included, with the diffs of the rest."""
    before = _snapshot(tree)
    monkeypatch.setattr(relock, "pudev_in", lambda _copy, *args: "")
    options = command.Options(variants_file=tree / "docker/variants.toml", dry_run=True)
    assert command.run(options, sys.stdout) == 0
    out = capsys.readouterr().out
    assert _snapshot(tree) == before
    assert f"would write requirements/lock/torch{NEXT}-py{PYTHON}.txt" in out
    assert f"would remove requirements/lock/torch{NEWEST}-py{PYTHON}.txt" in out
    assert ("would write docker/standins/standins.toml" in out) == PROFILED and "would write CHANGELOG.md" in out
    assert f'+torch = "{NEXT}"' in out and "+++ b/docker/variants.toml" in out


@pytest.mark.parametrize("rerun", ["--check", "--dry-run", "the move"])
def test_a_half_applied_move_is_finished_before_any_run_reads_the_tree(
        tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        rerun: str) -> None:
    """The apply fails after its second rename (tests/unit/test_new_torch_apply.py covers every way it can):
    the next run, whichever, first finishes it and says so on stderr, so it never decides from a half-moved
    tree; the tree ends as the whole move's, byte for byte. 0.5 s each measured."""
    monkeypatch.setattr(relock, "pudev_in", lambda _copy, *args: "")
    whole = _checkout(tmp_path / "whole")
    with monkeypatch.context() as patch:
        patch.setattr(command, "REPO_ROOT", whole)
        assert command.run(command.Options(variants_file=whole / "docker/variants.toml"), sys.stdout) == 0
    options = command.Options(variants_file=tree / "docker/variants.toml")
    replace, renamed = os.replace, []

    def failing(source: Any, target: Any, **kwargs: Any) -> None:
        renamed.extend([source] if str(source).endswith(".new-torch") else [])
        if len(renamed) == 2:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(target))
        replace(source, target, **kwargs)
    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", failing)
        with pytest.raises(PudevError, match=JOURNAL):
            command.run(options, sys.stdout)
    assert _snapshot(tree) != _snapshot(whole) and (tree / JOURNAL).exists()
    capsys.readouterr()
    again = command.Options(variants_file=tree / "docker/variants.toml", check=rerun == "--check",
                            dry_run=rerun == "--dry-run")
    assert command.run(again, sys.stdout) == 0
    said = capsys.readouterr()
    assert "finished the move" in said.err and said.out.startswith(f"current {NEXT}"), said
    assert _snapshot(tree) == _snapshot(whole)


@pytest.mark.parametrize("path", [VARIANTS_FILE, STANDINS_FILE], ids=["variants.toml", "standins.toml"])
def test_no_comment_names_what_a_release_moves(path: Path) -> None:
    """A move edits values, not prose: a comment that named the newest torch or its variants would be wrong the
    day after release day."""
    comments = [line.split("#", 1)[1] for line in path.read_text().splitlines()
                if line.lstrip().startswith("#") or "  # " in line]
    stale = [comment for comment in comments if NEWEST in comment or any(name in comment for name in LINE)]
    assert not stale, stale
