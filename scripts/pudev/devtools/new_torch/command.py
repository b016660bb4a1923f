"""`pudev new-torch [VERSION]`: move the newest line to a torch release, variant by variant, as its
official images appear. `--check` prints where each variant stands (what the workflow asks first);
the move is made in a scratch copy and lands in the tree only when every step succeeded; `--dry-run`
makes the whole move there and prints what it would change. Every run first finishes an apply an
earlier one left half done (transaction.recover)."""

from __future__ import annotations

import difflib
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pudev.common.errors import PudevError
from pudev.common.versions import release
from pudev.config.loader import load_matrix, variants_input
from pudev.config.model import Matrix
from pudev.devtools.new_torch import answers as asking
from pudev.devtools.new_torch.answers import TORCH_INDEX, Answers
from pudev.devtools.new_torch.matrix_edit import edit_matrix
from pudev.devtools.new_torch.pages_edit import refresh
from pudev.devtools.new_torch.readiness import Plan, decide, line_of, model_of, platforms_of
from pudev.devtools.new_torch.relock import relock
from pudev.devtools.new_torch.standins_edit import edit_standins, needed_toolkits
from pudev.devtools.new_torch.transaction import changes, recover, scratch_copy, step, swap_in
from pudev.paths import REPO_ROOT
from pudev.registry.client import RegistryClient
from pudev.registry.names import api_host
from pudev.reports.changelog import TagState, entry_for, today, with_entry

MATRIX, STANDINS, CHANGELOG = "docker/variants.toml", "docker/standins/standins.toml", "CHANGELOG.md"


@dataclass(frozen=True)
class Options:
    version: str = ""  # the release to move to; "" = the index's newest
    registry: str = "docker.io"  # where the official images live (a test's registry, or a mirror)
    torch_index: str = TORCH_INDEX
    variants_file: Path | None = None
    dry_run: bool = False
    check: bool = False
    without_base: bool = False


def checked(options: Options) -> tuple[str, dict[str, Any]]:
    """The variant file's text and data, and every argument checked, before any question goes out."""
    source = variants_input(options.variants_file)
    data = source.read_toml()
    load_matrix(source)  # a file pudev cannot build from fails here, naming the file
    newest = max((str(table["torch"]) for table in data["variants"].values()), key=release)
    if options.version and not re.fullmatch(r"\d+\.\d+\.\d+", options.version):
        raise PudevError(f"VERSION {options.version}: not a torch release; write X.Y.Z (e.g. 2.16.0), or leave it "
                         "out for the package index's newest")
    if options.version and release(options.version) < release(newest):
        raise PudevError(f"VERSION {options.version}: older than the newest line's torch {newest}; new-torch moves "
                         "forward only: name a newer release, or leave it out")
    if not re.fullmatch(r"[A-Za-z0-9.-]+(:\d+)?", options.registry):
        raise PudevError(f"--registry {options.registry}: not a registry host; write HOST[:PORT], e.g. docker.io "
                         "or a mirror's host")
    if not re.fullmatch(r"https?://[^\s/]+(/\S*)?", options.torch_index):
        raise PudevError(f"--torch-index {options.torch_index}: not an index URL; write https://HOST/PATH, the "
                         f"folder that holds torch's cuXYZ indexes (default {TORCH_INDEX})")
    return source.read_text(), data


def ask(options: Options, data: dict[str, Any]) -> Answers:
    """The default index first; the registry and torch's index only where the release is new to some variant."""
    python = str(model_of(data, line_of(data, "")).get("python", data.get("python", "3.12")))
    build = asking.torch_build(options.version, python=python)
    if release(build.version) < release(max((str(t["torch"]) for t in data["variants"].values()), key=release)):
        return Answers(build, frozenset(), {})
    client = RegistryClient(api_host(options.registry))
    official = asking.official_cudas(client, build.version)
    line = line_of(data, build.version)
    cudas = {str(data["variants"][name]["cuda"]) for name in line} | set(official) | {build.cuda} - {""}
    platforms = {p for name in line for p in platforms_of(data, data["variants"][name])}
    builds = asking.cuda_builds(build.version, cudas, platforms, python=python, index=options.torch_index)
    return Answers(build, builds, official, tuple(client.list_tags(asking.CUDA_REPOSITORY)))


def run(options: Options, out: TextIO) -> int:
    # Before anything reads the tree: a half-applied move is finished, so no run (--check and --dry-run
    # included) decides from a half-moved tree. Said on stderr: the workflow reads stdout's first line.
    said = recover(REPO_ROOT, also=[options.variants_file] if options.variants_file else [])
    if said:
        print(said, file=sys.stderr)
    text, data = checked(options)
    answers = ask(options, data)
    plan = decide(data, answers)
    print(plan.summary, file=out)
    for decision in plan.decisions:
        print(f"  {decision.line}", file=out)
    if options.check or plan.status != "ready":
        return 0
    source = variants_input(options.variants_file)
    with scratch_copy(REPO_ROOT) as copy:
        shutil.copyfile(source.path, copy / MATRIX)
        notes = move(copy, text, load_matrix(source), plan, answers, without_base=options.without_base)
        changed = changes(copy, REPO_ROOT)
        for note in notes:
            print(f"note: {note}", file=out)
        if options.dry_run:
            _show(copy, changed, source.path, out)
            return 0
        swap_in(copy, REPO_ROOT, changed, moved={MATRIX: source.path})
    for name, written in changed.items():
        print(f"{'wrote' if written else 'removed'} {name}", file=out)
    return 0


def move(copy: Path, text: str, old: Matrix, plan: Plan, answers: Answers, *, without_base: bool) -> list[str]:
    """Every step of the move, in the scratch copy; the notes a reviewer reads."""
    notes: list[str] = []
    old_standins = (copy / STANDINS).read_text()

    def matrix() -> None:
        edited = edit_matrix(text, plan, answers)
        (copy / MATRIX).write_text(edited.text)
        notes.extend(edited.notes)

    step("matrix", matrix)
    new = _loaded(copy / MATRIX)

    def standins() -> None:
        python = new.variants[plan.latest].python
        needed = needed_toolkits(old_standins, plan, answers.build, new)
        wheels = {version: _wheels(version, python) for version in needed}
        (copy / STANDINS).write_text(edit_standins(old_standins, plan, answers.build, new, wheels))

    step("stand-ins", standins)
    step("changelog", lambda: _changelog(copy, old, new, answers, notes))
    step("locks", lambda: relock(copy, old, new, plan, old_standins=old_standins, without_base=without_base))
    step("tables", lambda: refresh(new, copy))
    return notes


def _loaded(path: Path) -> Matrix:
    try:
        return load_matrix(path)
    except PudevError as error:
        raise PudevError(f"new-torch stopped at the matrix step, the tree is unchanged: the moved matrix breaks a "
                         f"rule ({error}); fix docker/variants.toml's newest line by hand, then rerun") from None


def _wheels(version: str, python: str) -> tuple[str, str]:
    found = asking.toolkit_wheels(version, python=python)
    if found is None:
        raise PudevError(f"the package index has no cuda-toolkit=={version}.* and nvidia-nvjitlink=={version}.* "
                         f"wheels for the CUDA {version} stand-in yet; rerun once NVIDIA has published them")
    return found


def _state(matrix: Matrix, name: str) -> TagState:
    variant = matrix.variants[name]
    return TagState(name, variant.torch, variant.cuda, variant.toolkit_versions, variant.platforms,
                    variant.latest, variant.python)


def _changelog(copy: Path, old: Matrix, new: Matrix, answers: Answers, notes: list[str]) -> None:
    date = answers.build.uploaded
    if not date:
        date = today()
        notes.append(f"the package index gave no upload time for torch {answers.torch}: the entry is dated {date}")
    previous = [_state(old, name) for name in old.variants]
    path = copy / CHANGELOG
    changelog = path.read_text() if path.exists() else ""
    for name in new.variants:
        found = entry_for(_state(new, name), previous, date=date)
        if found:
            changelog = with_entry(changelog, *found)
    path.write_text(changelog)


def _show(copy: Path, changed: dict[str, bool], matrix: Path, out: TextIO) -> None:
    """What the move would change: a line per file, then the diff of each file that is not a lock (the matrix
    against the file it was read from)."""
    for name, written in changed.items():
        print(f"would {'write' if written else 'remove'} {name}", file=out)
    for name, written in changed.items():
        if written and not name.startswith("requirements/lock/"):
            source = matrix if name == MATRIX else REPO_ROOT / name
            before = source.read_text() if source.exists() else ""
            print("".join(difflib.unified_diff(before.splitlines(keepends=True),
                                               (copy / name).read_text().splitlines(keepends=True),
                                               f"a/{name}", f"b/{name}")), end="", file=out)
