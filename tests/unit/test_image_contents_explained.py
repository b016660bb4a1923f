"""What the image installs says why, and the build steps get only the pudev they import.

Every OS package and every Python requirement carries a comment, as docker-stacks writes
them, so a package nobody can explain is visible in review. A build step before the image's
own tools are copied in mounts single pudev files that import nothing of pudev (the apt
rewriter, the lock parser), never the package: an edit anywhere else in pudev must not reach
the OS package and Python package layers."""

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


def _mounted_pudev_files() -> list[str]:
    """Every scripts/pudev source a RUN step of the Dockerfile bind-mounts."""
    return re.findall(r"--mount=type=bind,source=(scripts/pudev[^,\s]*)", DOCKERFILE.read_text())


def _pudev_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pudev"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("pudev")}
    return found


def test_build_steps_mount_single_pudev_files_that_import_no_pudev() -> None:
    """The OS package step runs the apt rewriter, the lock stage and the package steps the lock parser: each
    mounted alone, so each must stand alone; an edit anywhere else in pudev leaves those steps cached."""
    mounted = _mounted_pudev_files()
    assert {"scripts/pudev/mirror/apt.py", "scripts/pudev/common/lock_file.py"} <= set(mounted), mounted
    for source in mounted:
        path = REPO_ROOT / source
        assert path.is_file() and path.suffix == ".py", f"{source}: a build step mounts pudev whole, not one file"
        assert not _pudev_imports(path), f"{source} imports {_pudev_imports(path)}, which its build step lacks"
    assert "PYTHONPATH" not in DOCKERFILE.read_text(), "a build step puts pudev on its path"
