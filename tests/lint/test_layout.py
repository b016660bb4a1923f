"""The package layout is the architecture: each folder's import rule is an import-linter contract in
pyproject.toml (`lint-imports` enforces them, a lint gate); here, that every folder has one and that a
planted violation fails, who runs `docker` (engine/ only), that the host never imports torch, and that
no import cycle exists."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib

from pudev.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "scripts" / "pudev"
HOST_FOLDERS = ("cli", "config", "building", "engine", "registry", "testing", "release", "reports", "policy",
                "devtools", "host")
FOLDERS = (*HOST_FOLDERS, "image", "mirror", "common")


def contracts() -> dict[str, tuple[str, ...]]:
    """folder -> the pudev subpackages it may not import, from pyproject.toml's import-linter contracts (the
    rules `lint-imports` enforces, a lint gate, and the docs' layering table shows)."""
    with (REPO_ROOT / "pyproject.toml").open("rb") as handle:
        found = tomllib.load(handle)["tool"]["importlinter"]["contracts"]
    return {contract["id"]: tuple(contract["forbidden_modules"]) for contract in found
            if contract["type"] == "forbidden" and contract["source_modules"] == [f"pudev.{contract['id']}"]}


# Only engine/ runs the docker CLI: elsewhere, no name of the client or its environment, and no
# `docker ...` command line handed to subprocess or os.
ENGINE_ONLY_NAMES = ("docker_cli", "docker_env", "require_buildkit")
LAUNCHERS = ("subprocess", "os", "asyncio")
# Planning reads the variant, the checkout and the CA bundle, never the engine or a registry: what
# only those know (the input images' digests) is resolved in building/digests.py and passed in.
PURE_BUILD_MODULES = ("plan", "plan_assembly", "labels", "input_images", "record", "bake", "matrix",
                      "requirement_locks", "cabundle")
IMPURE = ("pudev.engine", "pudev.registry", "pudev.building.digests", "pudev.building.builder")


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


def _folders() -> list[str]:
    return sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")


def test_every_folder_has_a_rule() -> None:
    assert sorted(contracts()) == sorted(FOLDERS) == _folders(), "a folder under scripts/pudev without a contract"


def test_nothing_imports_cli_and_only_cli_imports_devtools() -> None:
    for folder, forbidden in contracts().items():
        if folder != "cli":
            assert "pudev.cli" in forbidden, f"{folder}/ may import cli/"
        if folder not in ("cli", "devtools"):
            assert "pudev.devtools" in forbidden, f"{folder}/ may import devtools/"


def test_a_forbidden_import_fails_the_gate(tmp_path: Path) -> None:
    """Keeps the gate honest: the same contracts on a copy of the package with one planted import fail."""
    copy = tmp_path / "scripts"
    shutil.copytree(PACKAGE, copy / "pudev", ignore=shutil.ignore_patterns("__pycache__"))
    planted = copy / "pudev" / "engine" / "planted.py"
    planted.write_text("from pudev.release import tags\n")
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    result = subprocess.run([str(Path(sys.executable).parent / "lint-imports")], cwd=tmp_path, capture_output=True,
                            text=True, check=False, env={**os.environ, "PYTHONPATH": str(copy)})
    assert result.returncode != 0 and "pudev.engine is not allowed to import pudev.release" in result.stdout, \
        result.stdout[-2000:]


def test_planning_modules_never_reach_the_engine() -> None:
    for name in PURE_BUILD_MODULES:
        imports = _imports(PACKAGE / "building" / f"{name}.py")
        assert not any(item.startswith(IMPURE) for item in imports), name


def test_the_host_side_never_imports_torch() -> None:
    for folder in HOST_FOLDERS:
        for path in _modules(folder):
            assert not any(name == "torch" or name.startswith("torch.") for name in _imports(path)), path


def _docker_command(node: ast.expr) -> bool:
    """A command line that starts the docker client: ["docker", ...] or "docker ..."."""
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        first = node.elts[0]
        return isinstance(first, ast.Constant) and str(first.value).rsplit("/", 1)[-1] == "docker"
    return isinstance(node, ast.Constant) and str(node.value).split(" ", 1)[0] == "docker"


def _runs_docker(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in ENGINE_ONLY_NAMES:
            found.append(f"line {node.lineno}: {node.attr}")
        elif isinstance(node, ast.Name) and node.id in ENGINE_ONLY_NAMES:
            found.append(f"line {node.lineno}: {node.id}")
        elif isinstance(node, ast.ImportFrom):
            found += [f"line {node.lineno}: imports {alias.name}" for alias in node.names
                      if alias.name in ENGINE_ONLY_NAMES]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name) and node.func.value.id in LAUNCHERS):
            arguments = [*node.args, *(keyword.value for keyword in node.keywords if keyword.arg == "args")]
            if any(_docker_command(argument) for argument in arguments):
                found.append(f"line {node.lineno}: {node.func.value.id}.{node.func.attr} of a docker command")
    return found


def test_only_the_engine_runs_docker() -> None:
    """engine/ is the only way to the engine: elsewhere a `docker` command goes through its functions."""
    outside = [path for path in sorted(PACKAGE.rglob("*.py")) if path.relative_to(PACKAGE).parts[0] != "engine"]
    assert outside
    bad = {str(path.relative_to(PACKAGE)): found for path in outside if (found := _runs_docker(path))}
    assert not bad, f"only engine/ runs the docker CLI: {bad}"


def test_the_layout_is_documented_where_a_newcomer_looks() -> None:
    """The docs' layering table is rendered from the contracts (tests/unit/test_docs_tables.py keeps it
    current); each folder is also described, in the package's docstring and the architecture page."""
    architecture = (REPO_ROOT / "docs" / "maintaining" / "architecture.md").read_text()
    docstring = (PACKAGE / "__init__.py").read_text()
    for folder in _folders():
        assert f"{folder}/" in docstring, f"pudev/__init__.py does not describe {folder}/"
        assert f"- `{folder}/`:" in architecture, f"docs/maintaining/architecture.md does not describe {folder}/"


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
