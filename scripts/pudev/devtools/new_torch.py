"""`pudev new-torch [VERSION]`: move the newest line to a torch release on the day it ships.

It asks the package index for the release (the newest, unless VERSION is given) and for the CUDA
build `pip install torch` gives, and the registry for pytorch/pytorch's official tags of it and
NVIDIA's CUDA images. With those answers alone it moves the newest line's variants (the highest
torch in the matrix) that have an official image of the release, adds a variant for a CUDA the
release brings, keeps a variant whose CUDA the release dropped on its old torch (as cu126 stayed
on 2.14.1), adds NVIDIA's newest toolkit of the line's CUDA major (the `second_toolkit` rule),
points `latest` at what `pip install torch` gives, and moves the stand-in profiles of the moved
variants to the release. Then it locks every moved build on every platform, refreshes the
generated tables and writes the changelog entry. `--check` only says where the release stands
(what the daily workflow asks first); `--dry-run` prints the change instead of making it.
"""

from __future__ import annotations

import copy
import difflib
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pudev.building.requirement_locks import lock_dir, tools_lock_path
from pudev.common.errors import PudevError
from pudev.common.variant import cuda_tag
from pudev.common.versions import release
from pudev.config.loader import load_matrix
from pudev.config.model import Matrix, Variant
from pudev.config.profiles import load_profile, profile_names
from pudev.config.variant_table import refresh_pages
from pudev.devtools.lock import write_locks
from pudev.devtools.torch_releases import (
    CUDA_REPOSITORY,
    OFFICIAL_REPOSITORY,
    IndexBuild,
    newest_cuda_tag,
    official_cudas,
    torch_build,
)
from pudev.paths import REPO_ROOT, STANDINS_FILE, VARIANTS_FILE
from pudev.registry.client import RegistryClient
from pudev.registry.names import api_host
from pudev.reports.changelog import (
    CHANGELOG,
    TagState,
    entry,
    entry_key,
    moved,
    moves_of,
    title,
    today,
    with_entry,
)

STATUSES = ("current", "waiting", "ready")


@dataclass(frozen=True)
class Answers:
    """What the index and the registry said of the release."""

    torch: str  # the release to move to
    index_cuda: str  # the CUDA of `pip install torch==VERSION` on linux/amd64 ("" for a CPU build)
    official: dict[str, str]  # CUDA release -> pytorch/pytorch's runtime tag of it
    cuda_tags: tuple[str, ...] = ()  # nvidia/cuda's tags
    torchvision: str = ""  # the torchvision release that requires exactly this torch


@dataclass(frozen=True)
class Move:
    """The change, decided: `text` is the new variant file ("" unless status is ready)."""

    status: str  # current: the newest line has it; waiting: no official image yet; ready
    before: str  # the newest line's torch before
    torch: str
    text: str = ""
    moved: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    stayed: tuple[str, ...] = ()  # of the newest line, without an official image of the release
    toolkits_added: tuple[str, ...] = ()
    latest: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def summary(self) -> str:
        """One line the workflow reads: the status word first."""
        if self.status == "current":
            return f"current {self.torch}: the newest line is on torch {self.before}"
        if self.status == "waiting":
            return (f"waiting {self.torch}: the index has torch {self.torch}, but {OFFICIAL_REPOSITORY} has no "
                    f"{self.torch}-cuda*-runtime tag yet; nothing to move")
        parts = [f"moves {', '.join(self.moved)}" if self.moved else "", f"adds {', '.join(self.added)}"
                 if self.added else "", f"keeps {', '.join(self.stayed)} on {self.before}" if self.stayed else ""]
        return f"ready {self.torch}: " + "; ".join(part for part in parts if part)


def _tomlkit() -> Any:
    try:
        import tomlkit
    except ImportError:
        raise PudevError("pudev new-torch edits the variant file with tomlkit, which is not installed: run "
                         "`make venv` (requirements/dev.txt)") from None
    return tomlkit


def _image_tag(reference: str) -> str:
    return reference.rsplit(":", 1)[1] if ":" in reference.rsplit("/", 1)[-1] else ""


def _flavour(reference: str) -> str:
    """nvidia/cuda:13.2.1-cudnn-runtime-ubuntu24.04 -> cudnn-runtime-ubuntu24.04 ("" for another image)."""
    match = re.fullmatch(r"\d+\.\d+\.\d+-(?P<flavour>.+)", _image_tag(reference))
    return match["flavour"] if reference.startswith(CUDA_REPOSITORY + ":") and match else ""


def decide(text: str, answers: Answers) -> Move:
    """The new variant file for `answers`, from the old one's text: values edited in place (comments kept),
    new toolkits inserted in release order, new variants appended."""
    tomlkit = _tomlkit()
    document = tomlkit.parse(text)
    variants = document["variants"]
    before = max((str(table["torch"]) for table in variants.values()), key=release)
    line = [name for name, table in variants.items() if str(table["torch"]) == before]
    if release(answers.torch) <= release(before):
        return Move("current", before, answers.torch)
    if not answers.official:
        return Move("waiting", before, answers.torch)
    catalogue: dict[str, dict[str, Any]] = document["toolkits"].unwrap()
    model = variants[max(line, key=lambda name: release(str(variants[name]["cuda"])))].unwrap()
    moved, added, notes, new_tables = [], [], [], []
    for cuda, tag in answers.official.items():
        name = cuda_tag(cuda)
        table = variants[name] if name in variants else _modelled_on(model, cuda)
        table["torch"] = answers.torch
        table["base_image"] = f"{OFFICIAL_REPOSITORY}:{tag}"
        for platform, facts in table.get("on", {}).items():
            notes += _follow_cuda(facts, name, platform, cuda, answers.cuda_tags)
        if name in variants:
            moved.append(name)
        else:
            added.append(name)
            new_tables.append(_variant_text(tomlkit, name, table))
    majors = sorted({cuda.split(".")[0] for cuda in answers.official})
    wanted = [*answers.official, *(_newest_of_major(answers.cuda_tags, major, catalogue) for major in majors)]
    toolkits_added = {cuda: _toolkit_entry(catalogue, cuda, answers.cuda_tags) for cuda in dict.fromkeys(wanted)
                      if cuda not in catalogue}
    latest = str(document["default_variant"])
    if answers.index_cuda and cuda_tag(answers.index_cuda) in [*moved, *added]:
        latest = cuda_tag(answers.index_cuda)
        document["default_variant"] = latest
    elif answers.index_cuda:
        notes.append(f"`pip install torch=={answers.torch}` gives the CUDA {answers.index_cuda} build, which has no "
                     f"official image: latest stays {latest}")
    new_text = tomlkit.dumps(document)
    for cuda, values in toolkits_added.items():
        new_text = _insert_toolkit(tomlkit, new_text, cuda, values)
    new_text = new_text.rstrip("\n") + "\n" + "".join(new_tables)
    stayed = tuple(name for name in line if name not in moved)
    return Move("ready", before, answers.torch, new_text, tuple(moved), tuple(added), stayed,
                tuple(toolkits_added), latest, tuple(notes))


def _modelled_on(model: dict[str, Any], cuda: str) -> dict[str, Any]:
    """A new variant shaped like the newest line's `model`, torch's own toolkit (where it lists toolkits)
    and that toolkit's arch lists following the new CUDA."""
    own = str(model["cuda"])
    table = {**copy.deepcopy(model), "cuda": cuda}
    if "toolkits" in table:
        table["toolkits"] = [cuda if version == own else version for version in table["toolkits"]]
    for place in (table, *table.get("on", {}).values()):
        if isinstance(place.get("cuda_arch_list"), dict):
            place["cuda_arch_list"] = {cuda if key == own else key: value
                                       for key, value in place["cuda_arch_list"].items()}
    return table


def _follow_cuda(facts: Any, name: str, platform: str, cuda: str, cuda_tags: Sequence[str]) -> list[str]:
    """A `wheels` base on another platform: NVIDIA's runtime image and PyTorch's index of the new CUDA."""
    if facts.get("base") != "wheels":
        return []
    notes = []
    flavour = _flavour(str(facts.get("base_image", "")))
    runtime = newest_cuda_tag(cuda_tags, cuda, flavour) if flavour else ""
    if runtime:
        facts["base_image"] = f"{CUDA_REPOSITORY}:{runtime}"
    else:
        notes.append(f"{name} on {platform}: no {CUDA_REPOSITORY}:{cuda}.*-{flavour or 'runtime'} tag found; "
                     "its base_image is unchanged, review it")
    index = str(facts.get("torch_index", ""))
    if re.search(r"/cu\d+/?$", index):
        facts["torch_index"] = re.sub(r"/cu\d+(/?)$", rf"/{cuda_tag(cuda)}\1", index)
    return notes


def _newest_of_major(cuda_tags: Sequence[str], major: str, catalogue: dict[str, Any]) -> str:
    """NVIDIA's newest X.Y image of `major` in the flavour the catalogue's toolkits of it use (devel on the
    same Ubuntu), at least the catalogue's newest of that major."""
    known = sorted((version for version in catalogue if version.split(".")[0] == major), key=release)
    flavour = _image_tag(str(catalogue[known[-1]]["image"])).split("-", 1)[1] if known else "devel"
    found = [match["cuda"] for tag in cuda_tags
             if (match := re.fullmatch(rf"(?P<cuda>{major}\.\d+)\.\d+-{re.escape(flavour)}", tag))]
    return max([*known, *found], key=release)


def _toolkit_entry(catalogue: dict[str, dict[str, Any]], cuda: str, cuda_tags: Sequence[str]) -> dict[str, Any]:
    """[toolkits."cuda"] from NVIDIA's newest devel image of it, its compiler facts copied from the newest
    toolkit of its major (a reviewer checks them against NVIDIA's release notes)."""
    major = cuda.split(".")[0]
    sibling = max((version for version in catalogue if version.split(".")[0] == major), key=release, default="")
    if not sibling:
        raise PudevError(f"CUDA {cuda} is a major the toolkit catalogue has no toolkit of; add [toolkits.\"{cuda}\"] "
                         "to docker/variants.toml by hand, then run pudev new-torch again")
    flavour = _image_tag(str(catalogue[sibling]["image"])).split("-", 1)[1]
    tag = newest_cuda_tag(cuda_tags, cuda, flavour)
    if not tag:
        raise PudevError(f"{CUDA_REPOSITORY} has no {cuda}.*-{flavour} tag for the CUDA {cuda} toolkit; wait for "
                         f"NVIDIA's image, or add [toolkits.\"{cuda}\"] by hand")
    return {**catalogue[sibling], "image": f"{CUDA_REPOSITORY}:{tag}"}


def _table_text(tomlkit: Any, header: str, values: dict[str, Any]) -> str:
    lines = [f"\n{header}"]
    for key, value in values.items():
        if isinstance(value, dict):
            inline = tomlkit.inline_table()
            inline.update(value)
            lines.append(f"{key} = {inline.as_string()}")
        else:
            lines.append(f"{key} = {tomlkit.item(value).as_string()}")
    return "\n".join(lines) + "\n"


def _variant_text(tomlkit: Any, name: str, table: dict[str, Any]) -> str:
    """A new [variants.NAME] table and its [variants.NAME.on."PLATFORM"] tables, as the file writes them."""
    text = _table_text(tomlkit, f"[variants.{name}]", {key: value for key, value in table.items() if key != "on"})
    for platform, facts in table.get("on", {}).items():
        text += _table_text(tomlkit, f'[variants.{name}.on."{platform}"]', dict(facts))
    return text


def _insert_toolkit(tomlkit: Any, text: str, cuda: str, values: dict[str, Any]) -> str:
    """[toolkits."cuda"] after the catalogue's last table of an older release (after its key lines, before
    the blank line and any comment that introduces what follows), so the catalogue stays in release order."""
    lines = text.splitlines(keepends=True)
    headers = [(index, match["version"]) for index, line in enumerate(lines)
               if (match := re.match(r'\[toolkits\."(?P<version>[\d.]+)"\]', line))]
    older = [index for index, version in headers if release(version) < release(cuda)] or [headers[-1][0]]
    end = older[-1] + 1
    while end < len(lines) and lines[end].strip() and not lines[end].lstrip().startswith(("#", "[")):
        end += 1
    return "".join(lines[:end]) + _table_text(tomlkit, f'[toolkits."{cuda}"]', values) + "".join(lines[end:])


def validate(text: str, where: Path) -> Matrix:
    """The new file, loaded as pudev loads it: a move that breaks a rule fails before anything is written."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / where.name
        path.write_text(text)
        return load_matrix(path)


def state_of_variant(variant: Variant) -> TagState:
    """What the variant's tags point at, as the changelog states it."""
    return TagState(variant.name, variant.torch, variant.cuda, variant.toolkit_versions, variant.platforms,
                    variant.latest)


def changelog_entries(old: Matrix, new: Matrix, *, date: str) -> list[tuple[str, str]]:
    """(key, entry) per variant whose tags' image changes between the two matrices (torch, CUDA, toolkits,
    platforms, latest) or is new: each of its tags before and after."""
    previous = [state_of_variant(variant) for variant in old.variants.values()]
    found = []
    for name, variant in new.variants.items():
        after = state_of_variant(variant)
        moves = moves_of(after, previous)
        if not any(moved(move.before, after) for move in moves):
            continue
        notes = []
        if after.latest and old.default_variant != name:
            notes.append(f"`latest` moves from {old.default_variant} to {name}: `pip install torch` gives the CUDA "
                         f"{variant.cuda} build of torch {variant.torch}. Where the host's driver is older than "
                         f"{name} needs, pull `{old.default_variant}` instead.")
        was = old.variants.get(name)
        if was is not None and was.torch != variant.torch:
            versioned = f"{was.torch}-{name}-py{was.python}"
            notes.append(f"The versioned tag of the image `{name}` held until now, `{versioned}`, stays where it is.")
        key = entry_key(after)
        found.append((key, entry(key, title(date, after), moves, notes=notes)))
    return found


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{path}", f"b/{path}"))


def follow_standins(text: str, move: Move, build: IndexBuild) -> tuple[str, list[str]]:
    """The stand-in file with each moved variant's profile on the release: its PyTorch stand-in (a real build
    from the default index) renamed and pinned to the release and the torchvision that requires it. Returns
    the new text and the stand-in images it renamed."""
    tomlkit = _tomlkit()
    document = tomlkit.parse(text)
    renamed = []
    for profile in document.get("profiles", {}).values():
        if profile.get("variant") not in move.moved:
            continue
        for key, table in document.get("pytorch", {}).items():
            args = table.get("args", {})
            if table.get("image") != profile.get("base_image") or args.get("TORCH_VERSION") != move.before:
                continue
            new_name = f"{move.torch}-cuda{build.cuda}"
            args["TORCH_VERSION"], args["TORCHVISION_VERSION"], args["TORCH_CUDA"] = \
                move.torch, build.torchvision, build.cuda
            text = tomlkit.dumps(document)
            for old_name in dict.fromkeys((str(key), _image_tag(str(table["image"])))):
                text = text.replace(f'"{old_name}"', f'"{new_name}"').replace(f':{old_name}"', f':{new_name}"')
                renamed.append(old_name)
            document = tomlkit.parse(text)
            break
    return tomlkit.dumps(document), renamed


@dataclass(frozen=True)
class Options:
    version: str = ""  # the release to move to; "" = the index's newest
    registry: str = "docker.io"  # where the official images live (a test's registry, or a mirror)
    variants_file: Path = VARIANTS_FILE
    dry_run: bool = False
    check: bool = False
    without_base: bool = False


def ask(options: Options, newest: dict[str, Any]) -> Answers:
    """The index's answer, then the registry's where the release is newer than the newest line (`newest`,
    its variant table): NVIDIA's tags too where there is something to move, so a check decides as a move does."""
    requirement = f"torch=={options.version}" if options.version else "torch"
    build = torch_build(requirement, platform="linux/amd64", python=str(newest["python"]))
    if release(build.version) <= release(str(newest["torch"])):
        return Answers(build.version, build.cuda, {}, (), build.torchvision)
    client = RegistryClient(api_host(options.registry))
    official = official_cudas(client, build.version)
    cuda_tags = tuple(client.list_tags(CUDA_REPOSITORY)) if official else ()
    return Answers(build.version, build.cuda, official, cuda_tags, build.torchvision)


def _newest_variant(text: str) -> dict[str, Any]:
    """The newest line's first variant table, with the file's shared fields as its defaults."""
    import tomllib

    data = tomllib.loads(text)
    newest = max(data["variants"].values(), key=lambda table: release(str(table["torch"])))
    return {**{key: value for key, value in data.items() if not isinstance(value, dict)}, **newest}


def run(options: Options, out: Any) -> int:
    """The whole move (or, with check or dry_run, what it would be); one status line first."""
    text = options.variants_file.read_text()
    answers = ask(options, _newest_variant(text))
    move = decide(text, answers)
    print(move.summary, file=out)
    if options.check or move.status != "ready":
        return 0
    new = validate(move.text, options.variants_file)
    old = load_matrix(options.variants_file)
    standins_text, _ = follow_standins(STANDINS_FILE.read_text(), move,
                                       IndexBuild(answers.torch, answers.index_cuda, answers.torchvision))
    changelog = CHANGELOG.read_text() if CHANGELOG.exists() else ""
    for key, text_of_entry in changelog_entries(old, new, date=today()):
        changelog = with_entry(changelog, key, text_of_entry)
    changes = {options.variants_file: move.text, STANDINS_FILE: standins_text, CHANGELOG: changelog}
    builds = [build for name in (*move.moved, *move.added) for build in new.builds[name].values()]
    for note in move.notes:
        print(f"note: {note}", file=out)
    if options.dry_run:
        for path, after in changes.items():
            before = path.read_text() if path.exists() else ""
            print(unified_diff(_shown(path), before, after), end="", file=out)
        for lock in sorted({build.lock for build in builds}):
            print(f"would lock requirements/lock/{lock}.txt and refresh the generated tables", file=out)
        return 0
    for path, after in changes.items():
        path.write_text(after)
    _lock(builds, move, options.without_base, out)
    for path in refresh_pages(new, REPO_ROOT):
        print(f"updated the matrix's tables in {_shown(path)}", file=out)
    return 0


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def _lock(builds: list[Variant], move: Move, without_base: bool, out: Any) -> None:
    """Lock the moved builds on every platform and the moved stand-in profiles; drop locks no build uses."""
    from pudev.config.selection import Selection, profile_builds, resolve

    for path in write_locks(builds, without_base=without_base):
        print(f"wrote {_shown(path)}", file=out)
    for profile in profile_names():
        if load_profile(profile).variant in move.moved:
            for path in write_locks(profile_builds(profile), without_base=without_base):
                print(f"wrote {_shown(path)}", file=out)
    used = {build.lock for build in resolve(Selection(names=("all",))).matrix.every_build()}
    used |= {build.lock for profile in profile_names() for build in profile_builds(profile)}
    for path in sorted(lock_dir().glob("*.txt")):
        if path.stem not in used and path != tools_lock_path():
            path.unlink()
            print(f"removed {_shown(path)} (no variant uses it now)", file=out)
