"""The variant file after a plan: values edited in place so comments and order stay, a new toolkit
inserted in release order, a new variant appended in the file's own style. Text in, text out."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pudev.common.errors import PudevError
from pudev.common.variant import cuda_tag
from pudev.common.versions import release
from pudev.devtools.new_torch.answers import CUDA_REPOSITORY, OFFICIAL_REPOSITORY, Answers, newest_cuda_tag
from pudev.devtools.new_torch.readiness import Plan, line_of, model_of


@dataclass(frozen=True)
class Edited:
    text: str
    toolkits_added: tuple[str, ...]
    notes: tuple[str, ...]


def tomlkit() -> Any:
    try:
        import tomlkit as module
    except ImportError:
        raise PudevError("pudev new-torch edits TOML with tomlkit, which is not installed: run `make venv` "
                         "(requirements/dev.txt)") from None
    return module


def image_tag(reference: str) -> str:
    return reference.rsplit(":", 1)[1] if ":" in reference.rsplit("/", 1)[-1] else ""


def edit_matrix(text: str, plan: Plan, answers: Answers) -> Edited:
    """The new variant file for `plan`: each ready variant on the release and its official image, each new one
    modelled on the line's newest, the toolkits they need (the rule's newest of each major too), `latest`."""
    toml = tomlkit()
    document = toml.parse(text)
    variants = document["variants"]
    ready = [d for d in plan.decisions if d.status == "ready"]
    model = model_of(document.unwrap(), line_of(document.unwrap(), plan.torch))
    notes: list[str] = []
    new_tables = []
    for decision in ready:
        table = variants[decision.variant] if decision.before else _modelled_on(model, decision.cuda)
        table["torch"] = plan.torch
        table["base_image"] = f"{OFFICIAL_REPOSITORY}:{answers.official[decision.cuda]}"
        for facts in table.get("on", {}).values():
            _follow_cuda(facts, decision.cuda, answers.cuda_tags)
        if not decision.before:
            new_tables.append(_variant_text(toml, decision.variant, table))
    catalogue: dict[str, dict[str, Any]] = document["toolkits"].unwrap()
    cudas = [d.cuda for d in ready]
    majors = sorted({cuda.split(".")[0] for cuda in cudas})
    wanted = [*cudas, *(_newest_of_major(answers.cuda_tags, major, catalogue) for major in majors)]
    added = {cuda: _toolkit_entry(catalogue, cuda, answers.cuda_tags) for cuda in dict.fromkeys(wanted)
             if cuda not in catalogue}
    document["default_variant"] = plan.latest
    if answers.build.cuda and plan.latest != cuda_tag(answers.build.cuda):
        notes.append(f"`pip install torch=={plan.torch}` gives the CUDA {answers.build.cuda} build, whose variant "
                     f"is not on the release yet: latest stays {plan.latest}")
    new_text = toml.dumps(document)
    for cuda, values in added.items():
        new_text = _insert_toolkit(toml, new_text, cuda, values)
    return Edited(new_text.rstrip("\n") + "\n" + "".join(new_tables), tuple(added), tuple(notes))


def _modelled_on(model: dict[str, Any], cuda: str) -> dict[str, Any]:
    """A new variant shaped like the newest line's `model`: torch's own toolkit (where it lists toolkits) and
    that toolkit's arch lists follow the new CUDA."""
    own = str(model["cuda"])
    table = {**copy.deepcopy(model), "cuda": cuda}
    if "toolkits" in table:
        table["toolkits"] = [cuda if version == own else version for version in table["toolkits"]]
    for place in (table, *table.get("on", {}).values()):
        if isinstance(place.get("cuda_arch_list"), dict):
            place["cuda_arch_list"] = {cuda if key == own else key: value
                                       for key, value in place["cuda_arch_list"].items()}
    return table


def _follow_cuda(facts: Any, cuda: str, cuda_tags: Sequence[str]) -> None:
    """A `wheels` base on another platform: NVIDIA's runtime image and torch's index of the CUDA (readiness
    made sure the image exists)."""
    if facts.get("base") != "wheels":
        return
    flavour = image_tag(str(facts.get("base_image", ""))).split("-", 1)[-1]
    facts["base_image"] = f"{CUDA_REPOSITORY}:{newest_cuda_tag(cuda_tags, cuda, flavour)}"
    index = str(facts.get("torch_index", ""))
    if re.search(r"/cu\d+/?$", index):
        facts["torch_index"] = re.sub(r"/cu\d+(/?)$", rf"/{cuda_tag(cuda)}\1", index)


def _newest_of_major(cuda_tags: Sequence[str], major: str, catalogue: dict[str, Any]) -> str:
    """NVIDIA's newest X.Y image of `major` in the flavour the catalogue's toolkits of it use (devel on the
    same Ubuntu), at least the catalogue's newest of that major."""
    known = sorted((version for version in catalogue if version.split(".")[0] == major), key=release)
    flavour = image_tag(str(catalogue[known[-1]]["image"])).split("-", 1)[1] if known else "devel"
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
    flavour = image_tag(str(catalogue[sibling]["image"])).split("-", 1)[1]
    tag = newest_cuda_tag(cuda_tags, cuda, flavour)
    if not tag:
        raise PudevError(f"{CUDA_REPOSITORY} has no {cuda}.*-{flavour} tag for the CUDA {cuda} toolkit; wait for "
                         f"NVIDIA's image, or add [toolkits.\"{cuda}\"] by hand")
    return {**catalogue[sibling], "image": f"{CUDA_REPOSITORY}:{tag}"}


def table_text(toml: Any, header: str, values: dict[str, Any]) -> str:
    lines = [f"\n{header}"]
    for key, value in values.items():
        if isinstance(value, dict):
            inline = toml.inline_table()
            inline.update(value)
            lines.append(f"{key} = {inline.as_string()}")
        else:
            lines.append(f"{key} = {toml.item(value).as_string()}")
    return "\n".join(lines) + "\n"


def _variant_text(toml: Any, name: str, table: dict[str, Any]) -> str:
    """A new [variants.NAME] table and its [variants.NAME.on."PLATFORM"] tables, as the file writes them."""
    text = table_text(toml, f"[variants.{name}]", {key: value for key, value in table.items() if key != "on"})
    for platform, facts in table.get("on", {}).items():
        text += table_text(toml, f'[variants.{name}.on."{platform}"]', dict(facts))
    return text


def _insert_toolkit(toml: Any, text: str, cuda: str, values: dict[str, Any]) -> str:
    """[toolkits."cuda"] after the catalogue's last table of an older release (after its key lines, before
    the blank line and any comment that introduces what follows), so the catalogue stays in release order."""
    lines = text.splitlines(keepends=True)
    headers = [(index, match["version"]) for index, line in enumerate(lines)
               if (match := re.match(r'\[toolkits\."(?P<version>[\d.]+)"\]', line))]
    older = [index for index, version in headers if release(version) < release(cuda)] or [headers[-1][0]]
    end = older[-1] + 1
    while end < len(lines) and lines[end].strip() and not lines[end].lstrip().startswith(("#", "[")):
        end += 1
    return "".join(lines[:end]) + table_text(toml, f'[toolkits."{cuda}"]', values) + "".join(lines[end:])
