"""The CI workflow: valid against GitHub's schema, hardened, and fed by the variant file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import hcl2
from ruamel.yaml import YAML

from pudev.ciexport import bake_hcl, matrix_json
from pudev.matrix import load_matrix
from pudev.paths import REPO_ROOT, VARIANTS_FILE

WORKFLOWS = sorted((REPO_ROOT / ".github/workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def _workflow(path: Path) -> dict[Any, Any]:
    data: dict[Any, Any] = YAML(typ="safe").load(path.read_text())
    return data


def test_workflows_validate_against_the_github_schema() -> None:
    assert WORKFLOWS
    result = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                             *map(str, WORKFLOWS)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_action_is_pinned_by_commit_sha() -> None:
    for path in WORKFLOWS:
        for line in path.read_text().splitlines():
            match = re.search(r"uses:\s*(\S+)", line)
            if match and not match.group(1).startswith("./"):
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", match.group(1)), line
                assert re.search(r"# v\d", line), f"say which release the SHA is: {line}"


def test_permissions_empty_by_default_and_widened_per_job() -> None:
    for path in WORKFLOWS:
        workflow = _workflow(path)
        assert workflow["permissions"] == {}
        for name, job in workflow["jobs"].items():
            assert "permissions" in job, f"{path.name}:{name} must state its permissions"


def test_pull_requests_cannot_push() -> None:
    workflow = _workflow(REPO_ROOT / ".github/workflows/images.yml")
    for name, job in workflow["jobs"].items():
        permissions = job.get("permissions", {})
        steps = json.dumps(job.get("steps", []))
        writes = any(value == "write" for value in permissions.values())
        if writes or "secrets." in steps or "pudev publish" in steps or "--cache-to" in steps:
            condition = " ".join(str(job.get("if", "")).split())
            assert "github.event_name != 'pull_request'" in condition, name
            assert "refs/heads/main" in condition and "refs/tags/v" in condition, name


def test_publish_waits_for_both_test_halves() -> None:
    jobs = _workflow(REPO_ROOT / ".github/workflows/images.yml")["jobs"]
    assert set(jobs["publish"]["needs"]) >= {"build", "gpu-test"}
    assert "PUDEV_REQUIRE_GPU" in json.dumps(jobs["gpu-test"]["steps"])
    assert "--cpu-only" in json.dumps(jobs["build"]["steps"])


def test_workflow_matrix_is_the_variant_file() -> None:
    jobs = _workflow(REPO_ROOT / ".github/workflows/images.yml")["jobs"]
    assert "pudev matrix --json" in json.dumps(jobs["matrix"]["steps"])
    for name in ("build", "gpu-test", "publish"):
        assert jobs[name]["strategy"]["matrix"] == "${{ fromJSON(needs.matrix.outputs.variants) }}"
    matrix = load_matrix(VARIANTS_FILE)
    include = json.loads(matrix_json(matrix))["include"]
    assert [entry["variant"] for entry in include] == list(matrix.variants)
    for entry in include:
        variant = matrix.get(entry["variant"])
        assert (entry["torch"], entry["cuda"], entry["base_image"]) == (variant.torch, variant.cuda, variant.base_image)
    assert [entry["variant"] for entry in include if entry["latest"]] == [matrix.default_variant]


def test_bake_file_parses_and_names_every_variant() -> None:
    matrix = load_matrix(VARIANTS_FILE)
    parsed = hcl2.loads(bake_hcl(matrix))
    targets = {name: body for block in parsed["target"] for name, body in block.items()}
    assert set(targets) == {f'"{name}"' for name in matrix.variants} or set(targets) == set(matrix.variants)
    groups = {name: body for block in parsed["group"] for name, body in block.items()}
    default = groups.get('"default"') or groups["default"]
    assert [t.strip('"') for t in default["targets"]] == list(matrix.variants)
    for name, variant in matrix.variants.items():
        body = targets.get(f'"{name}"') or targets[name]
        assert body["args"]["BASE_IMAGE"].strip('"') == variant.base_image
