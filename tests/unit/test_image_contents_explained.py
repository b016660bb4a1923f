"""What the image installs says why, and the build steps get only the pudev they import.

Every OS package and every Python requirement carries a comment, as docker-stacks writes
them, so a package nobody can explain is visible in review. The build-time slice of pudev
(docker/Dockerfile's build-lib stage) holds exactly what the mirror steps and the package steps
import: an edit anywhere else in pudev must not reach the OS package and Python package layers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pudev.paths import DOCKERFILE, REPO_ROOT

OS_PACKAGES = REPO_ROOT / "docker" / "steps" / "install-os-packages.sh"
IMAGE_REQUIREMENTS = REPO_ROOT / "requirements" / "image.in"
PACKAGE = REPO_ROOT / "scripts"


def _os_package_lines() -> list[str]:
    text = OS_PACKAGES.read_text()
    match = re.search(r"<<'PACKAGES'\n(.*?)\nPACKAGES\n", text, re.DOTALL)
    assert match, f"{OS_PACKAGES.name}: the commented package list (<<'PACKAGES' ... PACKAGES) is gone"
    return [line for line in match.group(1).splitlines() if line.strip()]


def test_every_os_package_says_why_it_is_there() -> None:
    lines = _os_package_lines()
    assert len(lines) >= 10
    for line in lines:
        name, _, why = line.partition("#")
        assert re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", name.strip()), line
        assert len(why.split()) >= 3, f"{OS_PACKAGES.name}: {name.strip()} has no reason: {line!r}"


def test_every_python_requirement_says_why_it_is_there() -> None:
    lines = IMAGE_REQUIREMENTS.read_text().splitlines()
    requirements = [(index, line) for index, line in enumerate(lines) if line.strip() and not line.startswith("#")]
    assert requirements
    for index, line in requirements:
        explained = "#" in line or (index > 0 and lines[index - 1].startswith("#"))
        assert explained, f"{IMAGE_REQUIREMENTS.name}: {line.split()[0]} has no comment saying why"


def _copied_into(stage_name: str) -> set[str]:
    """The module paths (scripts/...) a FROM scratch stage of the Dockerfile copies."""
    stage = DOCKERFILE.read_text().split(f"AS {stage_name}\n", 1)[1].split("\nFROM ", 1)[0]
    return {source for line in stage.splitlines() if line.startswith("COPY ") for source in line.split()[1:-1]}


def _module_file(module: str) -> Path:
    return PACKAGE / (module.replace(".", "/") + ".py")


def _pudev_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pudev."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("pudev.")}
    return found


def test_the_build_steps_get_exactly_the_pudev_they_import() -> None:
    """The mirror code and the lock-file parser (the package steps cut and read the lock with it), and what
    those import: an edit anywhere else in pudev leaves the OS package and Python package steps cached."""
    copied = _copied_into("build-lib")
    mirror = [path for path in (PACKAGE / "pudev" / "mirror").rglob("*.py")]
    assert "scripts/pudev/mirror" in copied
    needed = {module for path in mirror for module in _pudev_imports(path) if not module.startswith("pudev.mirror")}
    needed |= {"pudev.common.lock_file", *_pudev_imports(_module_file("pudev.common.lock_file"))}
    files = {"scripts/" + module.replace(".", "/") + ".py" for module in needed}
    assert files == copied - {"scripts/pudev/mirror"}, (files, copied)
