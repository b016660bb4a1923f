"""docker/Dockerfile reads top to bottom: every stage is defined before anything uses it, the Python
packages go in at most two plain uv steps (what rarely changes, then the rest), and no RUN carries more
than two comment lines (measurements live in docs/, not in the Dockerfile)."""

from __future__ import annotations

import re

from dockerfiles import instructions

from pudev.common.lock_file import PARTS
from pudev.paths import REPO_ROOT

DOCKERFILE = REPO_ROOT / "docker" / "Dockerfile"
STEPS = REPO_ROOT / "docker" / "steps"


def test_every_stage_is_defined_before_it_is_used() -> None:
    defined: list[str] = []
    for instruction in instructions(DOCKERFILE):
        used = re.findall(r"--from=([\w.-]+)", instruction) + re.findall(r"\bfrom=([\w.-]+)", instruction)
        if instruction.startswith("FROM "):
            used.append(instruction.split()[-3] if " AS " in instruction else instruction.split()[-1])
        for name in used:
            stage = name.replace("${BASE_KIND}", "")
            if "$" not in name and "/" not in name and name != "scratch":
                assert name in defined, f"{instruction[:80]} uses the stage {name} before it is defined"
            elif name.startswith("base-") and stage == "base-":  # base-${BASE_KIND}: each base comes first
                assert {"base-official", "base-wheels"} <= set(defined), instruction[:80]
        if instruction.startswith("FROM ") and " AS " in instruction:
            defined.append(instruction.split(" AS ")[1].strip())
    assert defined[-1] == "final"


def test_the_packages_go_in_two_plain_steps_in_order() -> None:
    steps = [item for item in instructions(DOCKERFILE) if "install-packages.sh" in item and item.startswith("RUN")]
    assert [re.search(r"install-packages\.sh \S+ (\S+)$", step).group(1) for step in steps] == list(PARTS)  # type: ignore[union-attr]
    script = (STEPS / "install-packages.sh").read_text()
    install = next(line for line in script.replace("\\\n", " ").splitlines() if "uv pip install" in line)
    assert all(flag in install for flag in ("--require-hashes", "--no-deps", "--compile-bytecode"))


def test_no_run_carries_more_than_two_comment_lines() -> None:
    lines = DOCKERFILE.read_text().splitlines()
    for number, line in enumerate(lines):
        if line.startswith("RUN "):
            above = 0
            while number - above - 1 >= 0 and lines[number - above - 1].startswith("#"):
                above += 1
            assert above <= 2, f"docker/Dockerfile:{number + 1}: {above} comment lines above a RUN (at most 2)"


def test_what_the_package_steps_mount_from_a_stage_is_the_same_each_time_it_is_built() -> None:
    # A .pyc holds its install's time: a rebuilt build-tools stage (its cache pruned) would differ,
    # and both package steps, which mount /tools, would run again (the fresh-machine run of 2026-12-05).
    stage = ""
    for instruction in instructions(DOCKERFILE):
        if instruction.startswith("FROM "):
            stage = instruction.split()[-1]
        elif stage == "build-tools" and "pip install" in instruction:
            assert "--no-compile" in instruction, instruction
            return
    raise AssertionError("no pip install in the build-tools stage")
