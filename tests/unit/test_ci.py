"""The CI workflow: valid against GitHub's schema, hardened, fed by the variant file, ready for its first
real run (and a cheap first run on a stand-in)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from pudev.building.cimatrix import matrix_json
from pudev.config.loader import load_matrix
from pudev.paths import REPO_ROOT, VARIANTS_FILE

WORKFLOWS = sorted((REPO_ROOT / ".github/workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def _workflow(path: Path) -> dict[Any, Any]:
    data: dict[Any, Any] = YAML(typ="safe").load(path.read_text())
    return data


IMAGES = REPO_ROOT / ".github/workflows/images.yml"
# The release each action is pinned to, and that release's commit: the newest release found when
# reviewed on 2026-12-01 (the public record searched then reached October 2026). Each SHA was read
# from the action's repository (`git rev-list -n1 TAG`) or, for releases newer than the stored copy
# of it, matched in several independent Dependabot/Renovate pins and release audits. A bump changes
# this table and the workflow together.
PINS = {
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "actions/upload-artifact": ("cf430e030ddbb5b0abf93d22962f4752f3646cd9", "v7.0.2"),
    "actions/download-artifact": ("9000827ccba6bdab643e8b6fd33ac0654aef8333", "v8.0.2"),
    "actions/attest": ("1e69f48acb82d1966a394da916b4c1698aa569d6", "v4.2.2"),
    "docker/login-action": ("dbcb813823bdd20940b903addbd779551569679f", "v4.6.0"),
    "github/codeql-action/upload-sarif": ("24c54180a607b1449ed407dd24f251e4e9147c8d", "v4.38.3"),
    "aquasecurity/trivy-action": ("ed142fd0673e97e23eac54620cfb913e5ce36c25", "v0.36.0"),
    "sigstore/cosign-installer": ("6f9f17788090df1f26f669e9d70d6ae9567deba6", "v4.1.2"),
}
# GitHub's own invocation of a `run:` step on Linux runners (shell: bash).
GITHUB_BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]


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


def test_every_action_is_the_reviewed_release() -> None:
    used = set()
    for line in IMAGES.read_text().splitlines():
        match = re.search(r"uses:\s*([\w./-]+)@([0-9a-f]{40})\s*#\s*(v[\d.]+)\s*$", line)
        if match:
            action, sha, release = match.groups()
            assert action in PINS, f"{action} is not in the reviewed pins"
            assert (sha, release) == PINS[action], f"{action}@{sha} # {release}; reviewed: {PINS[action]}"
            used.add(action)
    assert used == set(PINS)


def test_permissions_empty_by_default_and_widened_per_job() -> None:
    for path in WORKFLOWS:
        workflow = _workflow(path)
        assert workflow["permissions"] == {}
        for name, job in workflow["jobs"].items():
            assert "permissions" in job, f"{path.name}:{name} must state its permissions"


def _jobs() -> dict[str, Any]:
    jobs: dict[str, Any] = _workflow(IMAGES)["jobs"]
    return jobs


def _steps(job: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = _jobs()[job]["steps"]
    return steps


def _step(job: str, needle: str) -> tuple[int, dict[str, Any]]:
    """The first step of `job` whose text contains `needle`, and its index."""
    return next((i, step) for i, step in enumerate(_steps(job)) if needle in json.dumps(step))


def _never_for_pull_requests(condition: object) -> bool:
    text = " ".join(str(condition or "").split())
    return "github.event_name != 'pull_request'" in text


def test_only_the_publish_job_may_write() -> None:
    for name, job in _jobs().items():
        writes = sorted(key for key, value in (job.get("permissions") or {}).items() if value == "write")
        if name == "publish":
            # artifact-metadata: the attestations' storage records for the pushed image.
            assert set(writes) == {"packages", "id-token", "attestations", "artifact-metadata", "security-events"}, \
                writes
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


def _trivy_steps() -> list[tuple[int, dict[str, Any]]]:
    return [(i, step) for i, step in enumerate(_steps("publish")) if "trivy-action" in str(step.get("uses"))]


def _minutes(duration: str) -> float:
    match = re.fullmatch(r"(\d+)([hms])", duration)
    assert match, f"not a Trivy duration: {duration}"
    return int(match.group(1)) * {"h": 60, "m": 1, "s": 1 / 60}[match.group(2)]


def test_the_vulnerability_gate_runs_before_promotion() -> None:
    publish = _steps("publish")
    gate, step = next((i, step) for i, step in _trivy_steps() if step["with"]["format"] == "table")
    promote, _ = _step("publish", "pudev promote")
    assert gate < promote
    settings = step["with"]
    assert settings["severity"] == "CRITICAL,HIGH" and settings["ignore-unfixed"] is True
    assert settings["trivyignores"] == ".trivyignore.yaml" and "candidate.outputs.ref" in settings["image-ref"]
    assert settings["version"].startswith("v")  # the scanner itself is pinned too
    # It fails the job on a finding, except on the first run, whose stand-in is not a product.
    assert settings["exit-code"] == "${{ inputs.first-run && '0' || '1' }}"
    assert "if" not in step  # it always runs once the job does
    assert any("upload-sarif" in json.dumps(other) for other in publish)


def test_trivy_scans_vulnerabilities_only_with_a_timeout_for_a_7_gb_image() -> None:
    scans = _trivy_steps()
    assert len(scans) == 2
    for _, step in scans:
        settings = step["with"]
        assert settings["scanners"] == "vuln"  # no secret scanning of a 7 GB image
        # Trivy's default is 5 minutes; pulling and reading a ~7 GB image takes longer on a runner.
        assert 20 <= _minutes(settings["timeout"]) < _jobs()["publish"]["timeout-minutes"]


def test_provenance_sbom_attestation_and_signature_follow_promotion() -> None:
    steps = _steps("publish")
    names = [json.dumps(step) for step in steps]
    promote = next(i for i, text in enumerate(names) if "pudev promote" in text)
    attest = [i for i, step in enumerate(steps) if str(step.get("uses", "")).startswith("actions/attest@")]
    provenance = [i for i in attest if "sbom-path" not in steps[i]["with"]]  # no predicate: SLSA provenance
    sbom = [i for i in attest if "sbom-path" in steps[i]["with"]]
    assert len(provenance) == 1 and len(sbom) == 1
    for i in attest:
        assert steps[i]["with"]["push-to-registry"] is True and "candidate.outputs.digest" in names[i]
    for index in (*provenance, *sbom, next(i for i, text in enumerate(names) if "cosign sign" in text),
                  next(i for i, text in enumerate(names) if "pudev sbom" in text)):
        assert index > promote, names[index]


def test_workflow_matrix_is_the_variant_file() -> None:
    jobs = _jobs()
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


def _run_step(script: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A `run:` step as GitHub runs it, from `tmp_path`, with GITHUB_ENV and GITHUB_OUTPUT files there."""
    (tmp_path / "step.sh").write_text(script)
    files = {"GITHUB_ENV": str(tmp_path / "github_env"), "GITHUB_OUTPUT": str(tmp_path / "github_output")}
    for path in files.values():
        Path(path).write_text("")
    return subprocess.run([*GITHUB_BASH, str(tmp_path / "step.sh")], cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", **files, **env}, check=False)


def _all_places(workflow: dict[str, Any]) -> list[tuple[str, object]]:
    """Every env block, condition and step of the workflow, named, for searching expressions."""
    places: list[tuple[str, object]] = [("env", workflow.get("env")), ("concurrency", workflow.get("concurrency"))]
    for name, job in workflow["jobs"].items():
        places += [(f"{name}.env", job.get("env")), (f"{name}.if", job.get("if")),
                   (f"{name}.runs-on", job.get("runs-on"))]
        places += [(f"{name}.steps[{i}]", step) for i, step in enumerate(job.get("steps", []))]
    return places


def test_the_registry_path_is_lower_cased(tmp_path: Path) -> None:
    workflow = _workflow(IMAGES)
    uses_owner = [(where, thing) for where, thing in _all_places(workflow) if "repository_owner" in json.dumps(thing)]
    # Only one step reads the owner, and it writes REGISTRY lower-cased; nothing else uses the raw name.
    assert len(uses_owner) == 1, [where for where, _ in uses_owner]
    where, step = uses_owner[0]
    assert where.startswith("build.steps[") and isinstance(step, dict)
    assert step["env"] == {"OWNER": "${{ github.repository_owner }}"}
    result = _run_step(step["run"], tmp_path, {"OWNER": "My-Org"})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "github_env").read_text() == "REGISTRY=ghcr.io/my-org\n"
    index = int(where.split("[")[1].rstrip("]"))
    push, push_step = _step("build", "pudev push")
    assert index < push and '--registry "$REGISTRY"' in push_step["run"]
    assert "REGISTRY" not in json.dumps(workflow.get("env"))


def test_every_job_has_a_timeout_sized_to_its_work() -> None:
    jobs = _jobs()
    for name, job in jobs.items():
        assert isinstance(job.get("timeout-minutes"), int), f"{name} has no timeout-minutes"
    assert jobs["matrix"]["timeout-minutes"] <= 15 and jobs["checks"]["timeout-minutes"] <= 45
    # Two CUDA toolkits and a ~7 GB image, pushed and tested: hours at most, never GitHub's default of six.
    assert 120 <= jobs["build"]["timeout-minutes"] <= 240
    # A GPU job that hangs gives the concurrency slot back within two hours.
    assert jobs["gpu-test"]["timeout-minutes"] <= 120
    assert 60 <= jobs["publish"]["timeout-minutes"] <= 180


def test_every_artifact_upload_may_be_rerun() -> None:
    uploads = [step for job in _jobs().values() for step in job.get("steps", [])
               if str(step.get("uses", "")).startswith("actions/upload-artifact@")]
    assert len(uploads) == 3
    for step in uploads:  # a re-run of a failed leg uploads under the same name: 409 without overwrite
        assert step["with"]["overwrite"] is True, step["with"]["name"]


def test_cancelled_runs_stop_instead_of_always() -> None:
    jobs = _jobs().values()
    conditions = [str(job.get("if", "")) for job in jobs]
    conditions += [str(step.get("if", "")) for job in jobs for step in job.get("steps", [])]
    assert not [condition for condition in conditions if "always()" in condition]
    publish = " ".join(str(_jobs()["publish"]["if"]).split())
    assert publish.startswith("!cancelled() && ")
    for name in ("Build manifest", "reports-"):
        _, step = _step("build", name)
        assert step["if"] == "${{ !cancelled() }}"


def test_the_matrix_step_fails_when_pudev_fails(tmp_path: Path) -> None:
    _, step = _step("matrix", "pudev matrix --json")
    pudev = tmp_path / ".venv/bin/pudev"
    pudev.parent.mkdir(parents=True)
    pudev.write_text("#!/bin/sh\necho 'pudev: error: the variant file is broken' >&2\nexit 3\n")
    pudev.chmod(0o755)
    failed = _run_step(step["run"], tmp_path, {"FIRST_RUN_ARGS": ""})
    assert failed.returncode != 0 and "the variant file is broken" in failed.stderr
    assert (tmp_path / "github_output").read_text() == ""
    pudev.write_text('#!/bin/sh\necho \'{"include":[]}\' "$@"\n')
    passed = _run_step(step["run"], tmp_path, {"FIRST_RUN_ARGS": "--profile local"})
    assert passed.returncode == 0, passed.stderr
    assert (tmp_path / "github_output").read_text() == 'variants={"include":[]} matrix --json --profile local\n'


def _triggers() -> dict[str, Any]:
    workflow = _workflow(IMAGES)
    triggers: dict[str, Any] = workflow.get("on") or workflow[True]  # a YAML 1.1 reader makes `on` true
    return triggers


def test_pull_requests_build_only_for_files_that_affect_images_or_ci() -> None:
    on = _triggers()
    paths = on["pull_request"]["paths"]
    for needed in (".github/workflows/images.yml", ".trivyignore.yaml", ".dockerignore", "Makefile", "pyproject.toml",
                   "docker/**", "requirements/**", "scripts/**", "tests/**"):
        assert needed in paths, needed
    assert not any(path in ("**", "*", "**/*") or path.endswith(".md") for path in paths)
    assert "paths" not in (on.get("push") or {})  # main and release tags always build


def _pudev_argv(run: str, command: str, replacements: dict[str, str]) -> list[str]:
    line = next(line for line in run.splitlines() if f"pudev {command}" in line)
    for old, new in replacements.items():
        line = line.replace(old, new)
    return shlex.split(line.split(".venv/bin/pudev", 1)[1])


def test_ci_builds_from_the_upstream_indexes_not_the_china_mirrors() -> None:
    from pudev.cli.commands import HANDLERS
    from pudev.cli.parser import build_parser
    from pudev.cli.request import request_from

    _, step = _step("build", "pudev build")
    variant = load_matrix(VARIANTS_FILE).default_variant
    argv = _pudev_argv(step["run"], "build", {"${{ matrix.variant }}": variant, "$FIRST_RUN_ARGS": ""})
    request = request_from(build_parser(HANDLERS, "pudev").parse_args(argv), [])
    assert [(o.key, o.value) for o in request.selection.overrides] == [("build_mirror", "none")]
    assert request.build.no_ca_bundle


def test_the_candidate_token_is_checked_first_and_its_creation_explained(tmp_path: Path) -> None:
    steps = _steps("build")
    check = steps[0]
    assert _never_for_pull_requests(check["if"])
    assert check["env"] == {"TOKEN": "${{ secrets.CANDIDATE_REGISTRY_TOKEN }}"}
    login, _ = _step("build", "docker/login-action")
    assert login > 0
    missing = _run_step(check["run"], tmp_path, {"TOKEN": ""})
    assert missing.returncode == 1
    assert missing.stdout.startswith("::error ")
    for needed in ("Developer settings", "Tokens (classic)", "write:packages", "read:packages",
                   "Secrets and variables", "CANDIDATE_REGISTRY_TOKEN", "only classic tokens",
                   "every package your account can write"):
        assert needed in missing.stdout, needed
    assert _run_step(check["run"], tmp_path, {"TOKEN": "ghp_x"}).returncode == 0


def test_the_header_says_what_the_candidate_token_can_write() -> None:
    header = "\n".join(line for line in IMAGES.read_text().splitlines() if line.startswith("#"))
    header = " ".join(header.replace("#", " ").split())
    assert "limited to the -candidates package" not in header
    assert "classic personal access token with write:packages" in header
    assert "can write every package its owner can write, not only the -candidates one" in header


def _first_run_args() -> str:
    env = _workflow(IMAGES)["env"]["FIRST_RUN_ARGS"]
    match = re.fullmatch(r"\$\{\{ inputs\.first-run && '([^']+)' \|\| '' \}\}", env)
    assert match, env
    return match.group(1)


def test_the_first_run_is_a_dispatch_input_that_takes_every_job_with_it() -> None:
    first_run = _triggers()["workflow_dispatch"]["inputs"]["first-run"]
    assert first_run["type"] == "boolean" and first_run["default"] is False
    # Every pudev command that picks a variant gets the first run's arguments (empty otherwise);
    # tests by digest need none: the candidate reference says what it is.
    for job, command in (("matrix", "matrix"), ("build", "build"), ("build", "push"), ("build", "manifest"),
                         ("publish", "promote")):
        _, step = _step(job, f"pudev {command} ")
        line = next(line for line in step["run"].splitlines() if f"pudev {command} " in line)
        assert "$FIRST_RUN_ARGS" in line, f"{job}: pudev {command}"
    # The stand-ins are built before the build, on a first run only.
    standins, step = _step("build", "pudev standins")
    assert step["if"] == "inputs.first-run" and standins < _step("build", "pudev build")[0]
    # The stand-in profile needs only the CPU half, so the GPU job sits a first run out.
    assert "!inputs.first-run" in _jobs()["gpu-test"]["if"]


def test_the_first_run_builds_one_small_image_under_its_own_name(capsys: pytest.CaptureFixture[str]) -> None:
    from pudev.cli import main
    from pudev.config.selection import Selection, resolve
    from pudev.release.targets import parse_target

    args = shlex.split(_first_run_args())
    assert main(["matrix", "--json", *args]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["include"]  # one leg, not the CUDA matrix
    real = load_matrix(VARIANTS_FILE)
    assert entry["base_image"].startswith("pudev-standin/")  # built from docker/standins, not NVIDIA's registry
    assert entry["latest"] is False  # `latest` is never applied
    registry = "ghcr.io/some-owner"
    first = parse_target(registry, entry["image"])
    for variant in real.variants.values():
        released = parse_target(registry, variant.image)
        # Neither its candidates nor its tags land in a real image's repository.
        assert {first.candidates.repository, first.release.repository}.isdisjoint(
            {released.candidates.repository, released.release.repository})
    profile = args[args.index("--profile") + 1]
    (variant,) = resolve(Selection(profile=profile)).variants
    assert variant.required_tests == ("cpu",)  # promotable without a GPU runner


def test_the_readme_names_the_first_run_as_the_first_thing_after_forking() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("### After forking", 1)[1].split("\n#", 1)[0]
    first_step = section.split("\n1. ", 1)[1].split("\n2. ", 1)[0]
    assert "CANDIDATE_REGISTRY_TOKEN" in first_step or "first-run" in first_step
    assert "first-run" in section.split("\n3. ", 1)[0]
