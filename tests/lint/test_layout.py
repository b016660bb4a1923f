"""The package layout is the architecture: each folder's one rule (pudev/__init__.py)
is checked on the imports, so a shortcut across stages fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "scripts" / "pudev"
HOST_FOLDERS = ("cli", "config", "build", "engine", "registry", "release", "devtools")
# folder -> pudev subpackages it may not import
FORBIDDEN = {
    "config": ("pudev.engine", "pudev.build", "pudev.release", "pudev.devtools", "pudev.cli"),
    "engine": ("pudev.build", "pudev.release", "pudev.devtools", "pudev.cli", "pudev.config", "pudev.registry"),
    # The transport knows HTTP and docker's credential files, nothing of pudev's images or release rules.
    "registry": ("pudev.engine", "pudev.build", "pudev.release", "pudev.devtools", "pudev.cli", "pudev.config"),
    "image": (*(f"pudev.{folder}" for folder in HOST_FOLDERS), "pudev.paths"),
    "mirror": tuple(f"pudev.{folder}" for folder in (*HOST_FOLDERS, "image")),
    "common": tuple(f"pudev.{folder}" for folder in (*HOST_FOLDERS, "image", "mirror")),
}
# Planning reads the variant, the checkout and the CA bundle, never the engine or a registry: what
# only those know (the input images' digests) is resolved in build/digests.py and passed in.
PURE_BUILD_MODULES = ("plan", "planning", "labels", "bake", "cimatrix", "locks", "cabundle")
IMPURE = ("pudev.engine", "pudev.registry", "pudev.build.digests", "pudev.build.builder")


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _modules(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_folder_imports_follow_its_rule(folder: str) -> None:
    assert _modules(folder)
    for path in _modules(folder):
        bad = sorted(name for name in _imports(path) for prefix in FORBIDDEN[folder]
                     if name == prefix or name.startswith(prefix + "."))
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_planning_modules_never_reach_the_engine() -> None:
    for name in PURE_BUILD_MODULES:
        imports = _imports(PACKAGE / "build" / f"{name}.py")
        assert not any(item.startswith(IMPURE) for item in imports), name


def test_the_host_side_never_imports_torch() -> None:
    for folder in HOST_FOLDERS:
        for path in _modules(folder):
            assert not any(name == "torch" or name.startswith("torch.") for name in _imports(path)), path


def test_the_layout_is_documented_where_a_newcomer_looks() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    docstring = (PACKAGE / "__init__.py").read_text()
    for folder in sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"):
        assert f"{folder}/" in docstring, f"pudev/__init__.py does not describe {folder}/"
        assert f"`{folder}/`" in readme, f"README's architecture section does not describe {folder}/"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _pudev_imports(path: Path) -> set[str]:
    """pudev modules a module imports, at its top or inside a function: a lazy import still ties the two."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pudev"):
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("pudev")}
    return found


def test_no_import_cycles() -> None:
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {name: sorted(target for target in _pudev_imports(path) if target in modules and target != name)
             for name, path in modules.items()}
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for target in graph[name]:
            if state.get(target) == "open":
                cycle = [*trail[trail.index(target):], target] if target in trail else [name, target]
                raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
            if target not in state:
                visit(target, [*trail, target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
