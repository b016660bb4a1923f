"""The stand-in file after a plan. The newest line's profile stands in for `latest` with torch from the
default index (a real CUDA build): once `latest`'s variant is on the release, the profile follows it
(its PyTorch stand-in renamed and pinned to the release, its toolkit stand-ins to that variant's pair,
a recipe added for a toolkit it had none of); while it is not, the profile keeps the torch it has."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pudev.common.variant import cuda_tag
from pudev.config.model import Matrix
from pudev.devtools.new_torch.answers import IndexBuild
from pudev.devtools.new_torch.matrix_edit import image_tag, tomlkit
from pudev.devtools.new_torch.readiness import Plan


def _profiles(data: dict[str, Any], plan: Plan) -> dict[str, dict[str, Any]]:
    """The profiles of the newest line's variants."""
    line = {decision.variant for decision in plan.decisions}
    return {name: table for name, table in data.get("profiles", {}).items() if table.get("variant") in line}


def needed_toolkits(text: str, plan: Plan, build: IndexBuild, matrix: Matrix) -> list[str]:
    """The toolkits the following profile needs and the stand-in file has no recipe for."""
    data = tomlkit().parse(text).unwrap()
    if not _follows(plan, build) or not _profiles(data, plan):
        return []
    return [v for v in matrix.variants[plan.latest].toolkit_versions if v not in data.get("toolkits", {})]


def _follows(plan: Plan, build: IndexBuild) -> bool:
    """Whether `latest` is, after the move, the release's build the default index gives (which the
    stand-in installs)."""
    return plan.latest == cuda_tag(build.cuda) and any(
        d.variant == plan.latest and d.status in ("ready", "current") for d in plan.decisions)


def edit_standins(text: str, plan: Plan, build: IndexBuild, matrix: Matrix,
                  wheels: Mapping[str, tuple[str, str]]) -> str:
    """`wheels`: cuda-toolkit and nvidia-nvjitlink versions of each toolkit `needed_toolkits` named."""
    data = tomlkit().parse(text).unwrap()
    moving = {d.variant for d in plan.decisions if d.status == "ready"}
    for name, profile in _profiles(data, plan).items():
        if _follows(plan, build) and (profile["variant"] != plan.latest or plan.latest in moving):
            text = _follow(text, data, name, plan, build, toolkits=matrix.variants[plan.latest].toolkit_versions)
        elif profile["variant"] in moving and "torch" not in profile:
            stand_in = next(t for t in data.get("pytorch", {}).values() if t.get("image") == profile["base_image"])
            text = _in_profile(text, name, lambda region, torch=stand_in["args"]["TORCH_VERSION"]: re.sub(
                r'^(variant = .*\n)', rf'\1torch = "{torch}"  # until latest\'s variant is on the release\n',
                region, count=1, flags=re.MULTILINE))
    for version in wheels:
        text = _with_recipe(text, version, wheels[version])
    return text


def _follow(text: str, data: dict[str, Any], name: str, plan: Plan, build: IndexBuild, *,
            toolkits: Sequence[str]) -> str:
    profile = data["profiles"][name]
    old_key, stand_in = next((key, t) for key, t in data.get("pytorch", {}).items()
                             if t.get("image") == profile["base_image"])
    new_key = f"{plan.torch}-cuda{build.cuda}"
    old_args = stand_in["args"]
    for old, new in ((f'"{old_key}"', f'"{new_key}"'), (f':{image_tag(stand_in["image"])}"', f':{new_key}"'),
                     (f'TORCH_VERSION = "{old_args["TORCH_VERSION"]}"', f'TORCH_VERSION = "{plan.torch}"'),
                     (f'TORCHVISION_VERSION = "{old_args["TORCHVISION_VERSION"]}"',
                      f'TORCHVISION_VERSION = "{build.torchvision}"'),
                     (f'TORCH_CUDA = "{old_args["TORCH_CUDA"]}"', f'TORCH_CUDA = "{build.cuda}"')):
        text = text.replace(old, new)
    old_toolkits = sorted({m for key in _keys(profile) if (m := _toolkit_of(key))}, key=_release)
    renamed = dict(zip(old_toolkits, sorted(toolkits, key=_release), strict=False))
    variant = str(profile["variant"])

    def region_edit(region: str) -> str:
        region = re.sub(r'(toolkit\.|cuda:)(\d+\.\d+)(\.|-devel)',
                        lambda m: m[1] + renamed.get(m[2], m[2]) + m[3], region)
        region = re.sub(r'^torch = .*\n', "", region, flags=re.MULTILINE)
        return region.replace(f'"{variant}"', f'"{plan.latest}"').replace(f"-{variant}", f"-{plan.latest}")
    return _in_profile(text, name, region_edit)


def _keys(table: dict[str, Any]) -> list[str]:
    return [*table, *(key for facts in table.get("on", {}).values() for key in facts)]


def _toolkit_of(key: str) -> str:
    match = re.fullmatch(r"toolkit\.(\d+\.\d+)\..+", key)
    return match[1] if match else ""


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _in_profile(text: str, name: str, edit: Any) -> str:
    """`edit` applied to the profile's tables (its own and its per-platform ones), the rest as it was."""
    pattern = re.compile(rf'^\[profiles\.{re.escape(name)}[\].].*?(?=^\[(?!profiles\.{re.escape(name)}[\].])|\Z)',
                         re.MULTILINE | re.DOTALL)
    return pattern.sub(lambda match: edit(match[0]), text, count=1)


def _with_recipe(text: str, version: str, wheels: tuple[str, str]) -> str:
    """A [toolkits."version"] recipe, copied from the newest recipe of its major with NVIDIA's wheels of it."""
    major = version.split(".")[0]
    recipes = re.findall(rf'^\[toolkits\."({major}\.\d+)"\]\n(?:[^\[\n].*\n)*', text, flags=re.MULTILINE)
    sibling = max(recipes, key=_release)
    block = re.search(rf'^\[toolkits\."{re.escape(sibling)}"\]\n(?:[^\[\n].*\n)*', text, flags=re.MULTILINE)
    assert block is not None  # found just above
    toolkit, jitlink = wheels
    recipe = (block[0].replace(f'"{sibling}"', f'"{version}"').replace(f"cuda:{sibling}-", f"cuda:{version}-")
              .replace(f'CUDA_VERSION = "{sibling}"', f'CUDA_VERSION = "{version}"'))
    recipe = re.sub(r"\]==[\d.]+", f"]=={toolkit}", recipe)
    recipe = re.sub(r"nvidia-nvjitlink==[\d.]+", f"nvidia-nvjitlink=={jitlink}", recipe)
    return text[:block.end()] + "\n" + recipe.rstrip("\n") + "\n" + text[block.end():]
