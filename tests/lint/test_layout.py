"""The package layout is the architecture: each folder's one rule (pudev/__init__.py)
is checked on the imports, and on who runs `docker` (engine/ only), so a shortcut across
stages fails here; so does a folder without a rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "scripts" / "pudev"
HOST_FOLDERS = ("cli", "config", "building", "engine", "registry", "testing", "release", "reports", "policy",
                "devtools")
FOLDERS = (*HOST_FOLDERS, "image", "mirror", "common")


def _all_but(*allowed: str) -> tuple[str, ...]:
    """Every pudev folder but `allowed`: a rule that a folder added later cannot slip past."""
    return tuple(f"pudev.{folder}" for folder in FOLDERS if folder not in allowed)


# folder -> pudev subpackages it may not import. Every folder has one (see below); a folder's
# subfolders follow its rule. Nothing imports cli/, and only cli/ imports devtools/.
FORBIDDEN = {
    # The top: it hands requests to the stages, and the host side never imports the in-image code.
    "cli": ("pudev.image",),
    "config": _all_but("config", "mirror", "common"),
    "building": _all_but("building", "config", "engine", "registry", "mirror", "common"),
    "engine": _all_but("engine", "common"),
    # The transport knows HTTP and docker's credential files, nothing of pudev's images or release rules.
    "registry": _all_but("registry", "common"),
    # The in-image suite in a throwaway container: what ran is read from the image alone.
    "testing": _all_but("testing", "engine", "common"),
    # A built image released by digest: what it is comes from its own labels, never from the variant file.
    "release": _all_but("release", "building", "engine", "registry", "testing", "common"),
    # What a built image holds, read from the image itself; an SBOM is attached through release/.
    "reports": _all_but("reports", "building", "engine", "registry", "release", "common"),
    # Supply-chain policy asks registries, never the engine.
    "policy": _all_but("policy", "config", "registry", "common"),
    # Developer tooling stands beside the production path, which never imports it.
    # It may write what reports/ renders (the changelog on a torch release day).
    "devtools": ("pudev.cli", "pudev.testing", "pudev.release", "pudev.policy", "pudev.image"),
    "image": (*_all_but("image", "mirror", "common"), "pudev.paths"),
    "mirror": (*_all_but("mirror", "common"), "pudev.paths"),
    "common": (*_all_but("common"), "pudev.paths"),
}
# Only engine/ runs the docker CLI: elsewhere, no name of the client or its environment, and no
# `docker ...` command line handed to subprocess or os.
ENGINE_ONLY_NAMES = ("docker_cli", "docker_env", "require_buildkit")
LAUNCHERS = ("subprocess", "os", "asyncio")
# Planning reads the variant, the checkout and the CA bundle, never the engine or a registry: what
# only those know (the input images' digests) is resolved in building/digests.py and passed in.
PURE_BUILD_MODULES = ("plan", "plan_assembly", "labels", "input_images", "record", "bake", "cimatrix",
                      "requirement_locks", "lock_slices", "cabundle")
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
    assert sorted(FORBIDDEN) == sorted(FOLDERS) == _folders(), "a folder under scripts/pudev without a rule here"


def test_nothing_imports_cli_and_only_cli_imports_devtools() -> None:
    for folder, forbidden in FORBIDDEN.items():
        if folder != "cli":
            assert "pudev.cli" in forbidden, f"{folder}/ may import cli/"
        if folder not in ("cli", "devtools"):
            assert "pudev.devtools" in forbidden, f"{folder}/ may import devtools/"


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_folder_imports_follow_its_rule(folder: str) -> None:
    assert _modules(folder)
    for path in _modules(folder):
        bad = sorted(name for name in _imports(path) for prefix in FORBIDDEN[folder]
                     if name == prefix or name.startswith(prefix + "."))
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


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
    """The docs' layering table is rendered from FORBIDDEN above (tests/unit/test_docs_tables.py keeps it
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
