"""The CI workflow: valid against GitHub's schema, hardened, and fed by the variant file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from pudev.build.bake import CA_SECRET, bake_json
from pudev.build.cimatrix import matrix_json
from pudev.build.plan import build_args, local_tag
from pudev.config.loader import load_matrix
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


def _jobs() -> dict[str, Any]:
    jobs: dict[str, Any] = _workflow(REPO_ROOT / ".github/workflows/images.yml")["jobs"]
    return jobs


def _never_for_pull_requests(condition: object) -> bool:
    text = " ".join(str(condition or "").split())
    return "github.event_name != 'pull_request'" in text


def test_only_the_publish_job_may_write() -> None:
    for name, job in _jobs().items():
        writes = sorted(key for key, value in (job.get("permissions") or {}).items() if value == "write")
        if name == "publish":
            assert set(writes) == {"packages", "id-token", "attestations", "security-events"}, writes
        else:
            assert not writes, f"{name} holds write permissions {writes}"


def test_pull_requests_never_push_or_see_a_secret() -> None:
    for name, job in _jobs().items():
        for step in job.get("steps", []):
            text = json.dumps(step)
            risky = "secrets." in text or "pudev push" in text or "pudev promote" in text or "cosign sign" in text
            if risky:
                assert _never_for_pull_requests(job.get("if")) or _never_for_pull_requests(step.get("if")), \
                    f"{name}: {step.get('name') or step.get('uses')}"
    publish = " ".join(str(_jobs()["publish"]["if"]).split())
    assert "refs/heads/main" in publish and "refs/tags/v" in publish


def test_build_once_then_every_job_works_on_the_candidate_digest() -> None:
    jobs = _jobs()
    steps = {name: json.dumps(job["steps"]) for name, job in jobs.items()}
    assert steps["build"].count("pudev build") == 1
    assert "pudev build" not in steps["gpu-test"] and "pudev build" not in steps["publish"]
    assert "pudev push" in steps["build"] and "--ref-file" in steps["build"]
    assert 'pudev test \\"$(cat \\"candidate/' in steps["build"] and "--cpu-only" in steps["build"]
    assert 'pudev test \\"$(cat \\"candidate/' in steps["gpu-test"] and "--gpu-only" in steps["gpu-test"]
    assert "pudev promote" in steps["publish"] and "steps.candidate.outputs.ref" in steps["publish"]
    assert set(jobs["publish"]["needs"]) >= {"build", "gpu-test"}


def test_the_vulnerability_gate_runs_before_promotion() -> None:
    publish = _jobs()["publish"]["steps"]
    names = [json.dumps(step) for step in publish]
    gate = next(i for i, text in enumerate(names) if "trivy-action" in text and '"exit-code": "1"' in text)
    promote = next(i for i, text in enumerate(names) if "pudev promote" in text)
    assert gate < promote
    settings = publish[gate]["with"]
    assert settings["severity"] == "CRITICAL,HIGH" and settings["ignore-unfixed"] is True
    assert settings["trivyignores"] == ".trivyignore.yaml" and "candidate.outputs.ref" in settings["image-ref"]
    assert settings["version"].startswith("v")  # the scanner itself is pinned too
    assert any("upload-sarif" in text for text in names)


def test_provenance_sbom_attestation_and_signature_follow_promotion() -> None:
    names = [json.dumps(step) for step in _jobs()["publish"]["steps"]]
    promote = next(i for i, text in enumerate(names) if "pudev promote" in text)
    for needle in ("attest-build-provenance", "sbom-path", "cosign sign", "pudev sbom"):
        assert next(i for i, text in enumerate(names) if needle in text) > promote, needle


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


def test_bake_file_is_the_matrix() -> None:
    matrix = load_matrix(VARIANTS_FILE)
    bake = json.loads(bake_json(matrix))
    assert bake["group"]["default"]["targets"] == list(matrix.variants)
    assert set(bake["target"]) == set(matrix.variants)
    for name, variant in matrix.variants.items():
        target = bake["target"][name]
        assert target["tags"] == [local_tag(variant)]
        assert target["args"] == build_args(variant)
        assert target["platforms"] == [variant.platform]
        assert target["secret"] == [CA_SECRET]  # the CA bundle is a secret, never an argument
        assert (target["dockerfile"], target["target"], target["context"]) == ("docker/Dockerfile", "final", ".")
    assert "CA_BUNDLE" in bake["variable"]
