"""The CI workflow: valid against GitHub's schema, hardened, fed by the variant file, ready for its first
real run (and a cheap first run on a stand-in)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from shards import ARM64, NEWEST, PODMAN, SHARDS

from pudev.building.matrix import RUNNERS, matrix_json, publish_json
from pudev.config.loader import load_matrix
from pudev.config.profiles import profile_names
from pudev.paths import REPO_ROOT, VARIANTS_FILE
from pudev.registry.oci import OCI_ZSTD_LAYER

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


def test_only_the_publish_and_changelog_jobs_may_write() -> None:
    for name, job in _jobs().items():
        writes = sorted(key for key, value in (job.get("permissions") or {}).items() if value == "write")
        if name == "publish":
            # artifact-metadata: the attestations' storage records for the pushed image.
            assert set(writes) == {"packages", "id-token", "attestations", "artifact-metadata", "security-events"}, \
                writes
        elif name == "changelog":  # a branch and a pull request with the changelog entries, nothing published
            assert set(writes) == {"contents", "pull-requests"}, writes
        else:
            assert not writes, f"{name} holds write permissions {writes}"


def test_the_changelog_is_written_from_the_images_before_and_after_each_move() -> None:
    """The publish job notes which image each moving tag points at before promoting; after every variant is
    published, the changelog job compares those with the new images' manifests (`pudev changelog`)."""
    jobs = _jobs()
    before, _ = _step("publish", "before-$tag.txt")
    promote, _ = _step("publish", "pudev promote")
    assert before < promote
    changelog = jobs["changelog"]
    assert changelog["needs"] == ["matrix", "publish"] and "refs/heads/main" in changelog["if"]
    assert "!inputs.first-run" in changelog["if"]
    runs = "\n".join(step.get("run", "") for step in changelog["steps"])
    assert '.venv/bin/pudev changelog "$after" "$@"' in runs and "gh pr create" in runs


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
    assert "pudev promote" in steps["publish"] and "steps.candidate.outputs.refs" in steps["publish"]
    assert set(jobs["publish"]["needs"]) >= {"build", "gpu-test"}


def _trivy_steps() -> list[tuple[int, dict[str, Any]]]:
    return [(i, step) for i, step in enumerate(_steps("publish")) if "trivy-action" in str(step.get("uses"))]


def _minutes(duration: str) -> float:
    match = re.fullmatch(r"(\d+)([hms])", duration)
    assert match, f"not a Trivy duration: {duration}"
    return int(match.group(1)) * {"h": 60, "m": 1, "s": 1 / 60}[match.group(2)]


ARCHES = sorted(platform.split("/")[1] for platform in RUNNERS)  # every platform a build leg can have


def test_the_vulnerability_gate_runs_before_promotion_on_every_platform() -> None:
    publish = _steps("publish")
    gates = [(i, step) for i, step in _trivy_steps() if step["with"]["format"] == "table"]
    promote, _ = _step("publish", "pudev promote")
    # One gate per platform, on that platform's candidate digest, whenever the variant has that platform.
    assert sorted(step["with"]["image-ref"] for _, step in gates) == [
        f"${{{{ steps.candidate.outputs.{arch} }}}}" for arch in ARCHES]
    for gate, step in gates:
        arch = step["with"]["image-ref"].split(".")[-1].rstrip(" }")
        assert gate < promote
        settings = step["with"]
        assert settings["severity"] == "CRITICAL,HIGH" and settings["ignore-unfixed"] is True
        assert settings["trivyignores"] == ".trivyignore.yaml"
        assert settings["version"].startswith("v")  # the scanner itself is pinned too
        # It fails the job on a finding, except on the first run, whose stand-in is not a product.
        assert settings["exit-code"] == "${{ inputs.first-run && '0' || '1' }}"
        assert step["if"] == f"contains(matrix.arches, '{arch}')"  # it always runs once the job does
    for arch in ARCHES:  # each platform's SARIF goes to code scanning under its own category
        sarif = [step for _, step in _trivy_steps() if step["with"]["format"] == "sarif"
                 and step["with"]["image-ref"].endswith(f".{arch} }}}}")]
        assert [step["with"]["output"] for step in sarif] == [f"trivy-${{{{ matrix.variant }}}}-{arch}.sarif"]
        uploads = [step for step in publish if "upload-sarif" in str(step.get("uses"))
                   and step["with"]["category"] == f"trivy-${{{{ matrix.variant }}}}-{arch}"]
        assert [step["with"]["sarif_file"] for step in uploads] == [sarif[0]["with"]["output"]]
        assert f"contains(matrix.arches, '{arch}')" in uploads[0]["if"] and "!cancelled()" in uploads[0]["if"]


def test_trivy_scans_vulnerabilities_only_with_a_timeout_for_a_7_gb_image() -> None:
    scans = _trivy_steps()
    assert len(scans) == 2 * len(ARCHES)  # the gate and the SARIF, per platform
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
    assert len(provenance) == 1 and len(sbom) == len(ARCHES)
    for i in attest:
        assert steps[i]["with"]["push-to-registry"] is True
    # Provenance for what the tags point at (the index promote wrote), each SBOM for its platform's image.
    assert steps[provenance[0]]["with"]["subject-digest"] == "${{ steps.promote.outputs.digest }}"
    assert "steps.promote.outputs.release" in next(text for text in names if "cosign sign" in text)
    attested = sorted((steps[i]["with"]["subject-digest"], steps[i]["with"]["sbom-path"], steps[i]["if"]) for i in sbom)
    assert attested == [
        (f"${{{{ steps.candidate.outputs.{arch}-digest }}}}", f"sbom-${{{{ matrix.variant }}}}-{arch}.cdx.json",
         f"contains(matrix.arches, '{arch}')") for arch in ARCHES]
    for index in (*provenance, *sbom, next(i for i, text in enumerate(names) if "cosign sign" in text),
                  next(i for i, text in enumerate(names) if "pudev sbom" in text)):
        assert index > promote, names[index]


def test_workflow_matrix_is_the_variant_file() -> None:
    jobs = _jobs()
    assert "pudev matrix" in json.dumps(jobs["matrix"]["steps"])
    # build: one leg per variant and platform; publish: one per variant; gpu-test: build's amd64 legs.
    for name, output in (("build", "variants"), ("gpu-test", "gpu"), ("publish", "publish")):
        assert jobs[name]["strategy"]["matrix"] == f"${{{{ fromJSON(needs.matrix.outputs.{output}) }}}}", name
        assert jobs["matrix"]["outputs"][output] == f"${{{{ steps.matrix.outputs.{output} }}}}"
    matrix = load_matrix(VARIANTS_FILE)
    include = json.loads(matrix_json(matrix))["include"]
    assert [(entry["variant"], entry["platform"]) for entry in include] == [
        (name, platform) for name, variant in matrix.variants.items() for platform in variant.platforms]
    assert any(entry["platform"] == "linux/arm64" for entry in include)  # the current line is built for arm64
    for entry in include:
        variant = matrix.get(entry["variant"])
        assert (entry["torch"], entry["cuda"]) == (variant.torch, variant.cuda)
        assert entry["runner"] == RUNNERS[entry["platform"]] and entry["arch"] == entry["platform"].split("/")[1]
    assert {entry["variant"] for entry in include if entry["latest"]} == {matrix.default_variant}
    published = json.loads(publish_json(matrix))["include"]
    assert [(entry["variant"], entry["platforms"]) for entry in published] == [
        (name, ",".join(variant.platforms)) for name, variant in matrix.variants.items()]


def _run_step(script: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A `run:` step as GitHub runs it, from `tmp_path`, with GITHUB_ENV and GITHUB_OUTPUT files there."""
    (tmp_path / "step.sh").write_text(script)
    files = {"GITHUB_ENV": str(tmp_path / "github_env"), "GITHUB_OUTPUT": str(tmp_path / "github_output"),
             "GITHUB_STEP_SUMMARY": str(tmp_path / "github_step_summary")}
    for path in files.values():
        Path(path).write_text("")
    return subprocess.run([*GITHUB_BASH, str(tmp_path / "step.sh")], cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", **files, **_checkout(), **env}, check=False)


def _checkout() -> dict[str, str]:
    """The checkout the in-process pudev reads (PUDEV_ROOT, where a test set it), for the step's pudev too."""
    return {"PUDEV_ROOT": os.environ["PUDEV_ROOT"]} if os.environ.get("PUDEV_ROOT") else {}


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
    # One shard: its stand-ins and stand-in build from a cold cache, then its e2e tests (reports/test-times-SHARD.json).
    assert 60 <= jobs["proof"]["timeout-minutes"] <= 120


def test_every_artifact_upload_may_be_rerun() -> None:
    uploads = [step for job in _jobs().values() for step in job.get("steps", [])
               if str(step.get("uses", "")).startswith("actions/upload-artifact@")]
    assert len(uploads) == 5
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
    _, step = _step("matrix", "pudev matrix")
    pudev = tmp_path / ".venv/bin/pudev"
    pudev.parent.mkdir(parents=True)
    pudev.write_text("#!/bin/sh\necho 'pudev: error: the variant file is broken' >&2\nexit 3\n")
    pudev.chmod(0o755)
    failed = _run_step(step["run"], tmp_path, {"FIRST_RUN_ARGS": ""})
    assert failed.returncode != 0 and "the variant file is broken" in failed.stderr
    assert (tmp_path / "github_output").read_text() == ""
    pudev.write_text('#!/bin/sh\nprintf \'{"include":[{"platform":"linux/amd64","args":"%s"}]}\\n\' "$*"\n')
    passed = _run_step(step["run"], tmp_path, {"FIRST_RUN_ARGS": "--profile local"})
    assert passed.returncode == 0, passed.stderr
    assert _outputs(tmp_path) == {
        "variants": '{"include":[{"platform":"linux/amd64","args":"matrix --profile local"}]}',
        "publish": '{"include":[{"platform":"linux/amd64","args":"matrix --publish --profile local"}]}',
        "gpu": '{"include":[{"platform":"linux/amd64","args":"matrix --profile local"}]}',
        "platform-args": ""}


def _outputs(tmp_path: Path) -> dict[str, str]:
    """What a step wrote to GITHUB_OUTPUT (one key=value a line), each key once."""
    lines = (tmp_path / "github_output").read_text().splitlines()
    found = dict(line.split("=", 1) for line in lines)
    assert len(found) == len(lines), lines
    return found


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
    argv = _pudev_argv(step["run"], "build", {"${{ matrix.variant }}": variant, "$FIRST_RUN_ARGS": "",
                                              "$PLATFORM_ARGS": "", "$REQUIRED_TESTS_ARGS": "",
                                              "${{ matrix.platform }}": "linux/arm64"})
    request = request_from(build_parser(HANDLERS, "pudev").parse_args(argv), [])
    assert [(o.key, o.value) for o in request.selection.overrides] == [("build_mirror", "none")]
    assert request.build.no_ca_bundle
    assert request.selection.platform == "linux/arm64"


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


def _header_words() -> str:
    header = "\n".join(line for line in IMAGES.read_text().splitlines() if line.startswith("#"))
    return " ".join(header.replace("#", " ").split())


def test_the_header_names_every_secret_variable_and_runner_the_workflow_uses() -> None:
    """What a fork must set up, read from the workflow itself: each secret and repository variable it
    reads, each runner its matrix picks, and the profile its first run builds, is explained up top."""
    text, header = IMAGES.read_text(), _header_words()
    secrets = set(re.findall(r"secrets\.([A-Z0-9_]+)", text)) - {"GITHUB_TOKEN"}  # GitHub's own, not a fork's
    variables = set(re.findall(r"vars\.([A-Z0-9_]+)", text))
    assert secrets and variables
    for name in sorted(secrets | variables):
        assert name in header, f"{IMAGES.name} reads {name}, which its header never explains"
    for platform, runner in RUNNERS.items():
        assert runner in header and platform in header, (platform, runner)
    profile = re.search(r"--profile ([\w-]+)", _first_run_args())
    assert profile and f"--profile {profile.group(1)}" in header and profile.group(1) in profile_names()


def _first_run_args() -> str:
    env = _workflow(IMAGES)["env"]["FIRST_RUN_ARGS"]
    match = re.fullmatch(r"\$\{\{ inputs\.first-run && '([^']+)' \|\| '' \}\}", env)
    assert match, env
    return match.group(1)


def test_the_first_run_is_a_dispatch_input_that_takes_every_job_with_it() -> None:
    first_run = _triggers()["workflow_dispatch"]["inputs"]["first-run"]
    assert first_run["type"] == "boolean" and first_run["default"] is False
    # Every pudev command that picks a variant gets the first run's arguments (empty otherwise);
    # tests and promotion by digest need none: the candidate says what it is.
    for job, command in (("matrix", "matrix"), ("build", "build"), ("build", "push"), ("build", "manifest")):
        _, step = _step(job, f"pudev {command} ")
        line = next(line for line in step["run"].splitlines() if f"pudev {command} " in line)
        assert "$FIRST_RUN_ARGS" in line, f"{job}: pudev {command}"
        # and so does the fork fallback's (`--set platforms=linux/amd64` where arm64 is left out)
        assert ("$platform_args" if job == "matrix" else "$PLATFORM_ARGS") in line, f"{job}: pudev {command}"
    # The stand-ins are built before the build, on a first run only, for the leg's own platform.
    standins, step = _step("build", "pudev standins")
    assert step["if"] == "inputs.first-run" and standins < _step("build", "pudev build")[0]
    assert 'sudo .venv/bin/pudev standins --no-ca-bundle --platform "${{ matrix.platform }}"' in step["run"]
    # The stand-in profile needs only the CPU half, so the GPU job sits a first run out.
    assert "!inputs.first-run" in _jobs()["gpu-test"]["if"]


def test_the_first_run_builds_one_small_image_under_its_own_name(capsys: pytest.CaptureFixture[str]) -> None:
    from pudev.cli import main
    from pudev.config.selection import Selection, resolve
    from pudev.release.targets import parse_target

    args = shlex.split(_first_run_args())
    assert main(["matrix", *args]) == 0
    entries = json.loads(capsys.readouterr().out)["include"]
    # One variant, not the CUDA matrix, on both platforms (the first run proves the arm64 path too).
    assert len({entry["variant"] for entry in entries}) == 1
    assert sorted(entry["platform"] for entry in entries) == sorted(RUNNERS)
    real = load_matrix(VARIANTS_FILE)
    for entry in entries:
        assert entry["base_image"].startswith("pudev-standin/")  # built from docker/standins, not NVIDIA's registry
        assert entry["latest"] is False  # `latest` is never applied
    entry = entries[0]
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


def test_the_docs_first_run_steps_name_what_the_workflow_reads() -> None:
    """After forking, the README leads to the first run, whose steps name the secret the build job checks
    and the workflow's first-run input: a renamed secret or input fails here, not a fork's first run."""
    assert "docs/publishing/forking.md" in (REPO_ROOT / "README.md").read_text()
    steps = re.split(r"^\d+\. ", (REPO_ROOT / "docs/publishing/forking.md").read_text(), flags=re.MULTILINE)[1:]
    secret = re.search(r"`([A-Z_]+)`", steps[0])
    assert secret and f"${{{{ secrets.{secret.group(1)} }}}}" in IMAGES.read_text(), steps[0]
    workflow = _workflow(IMAGES)
    triggers: dict[str, Any] = workflow.get("on") or workflow[True]  # a YAML 1.1 reader makes `on` true
    dispatch = triggers["workflow_dispatch"]["inputs"]
    assert "first-run" in dispatch and "first-run" in steps[1], steps[1]


def _pudev_lines(job: str) -> list[str]:
    """Every line of `job`'s run steps that calls pudev (a folded step is one line)."""
    return [line for step in _steps(job) for line in str(step.get("run", "")).splitlines()
            if ".venv/bin/pudev " in line]


def test_each_build_leg_runs_on_its_platforms_runner_and_names_that_platform() -> None:
    jobs = _jobs()
    assert jobs["build"]["runs-on"] == "${{ matrix.runner }}"
    for job in ("build", "gpu-test"):
        lines = _pudev_lines(job)
        assert lines
        for line in lines:
            assert '--platform "${{ matrix.platform }}"' in line, f"{job}: {line}"
    commands = {line.split(".venv/bin/pudev ", 1)[1].split()[0] for line in _pudev_lines("build")}
    assert commands == {"standins", "build", "test", "push", "manifest"}
    # The runner is the platform's own: arm64 legs build natively on GitHub's hosted arm64 runners.
    assert RUNNERS == {"linux/amd64": "ubuntu-24.04", "linux/arm64": "ubuntu-24.04-arm"}


def test_artifacts_are_named_per_variant_and_platform() -> None:
    leg = "${{ matrix.variant }}-${{ matrix.arch }}"
    uploads = {step["with"]["name"]: step for step in _steps("build")
               if str(step.get("uses", "")).startswith("actions/upload-artifact@")}
    assert set(uploads) == {f"candidate-{leg}", f"reports-{leg}"}
    build = json.dumps(_steps("build"))
    assert build.count(f"candidate/{leg}.txt") == 2  # written by push, read by the test by digest
    assert f"reports/{leg}.xml" in build and "reports/${{ matrix.variant }}.xml" not in build
    _, gpu = _step("gpu-test", "actions/download-artifact@")
    assert gpu["with"]["name"] == f"candidate-{leg}"
    _, publish = _step("publish", "actions/download-artifact@")
    assert publish["with"] == {"pattern": "candidate-${{ matrix.variant }}-*", "merge-multiple": True,
                               "path": "candidate/"}


def test_the_gpu_half_runs_on_the_amd64_legs_only(tmp_path: Path) -> None:
    gpu = _jobs()["gpu-test"]
    assert gpu["strategy"]["matrix"] == "${{ fromJSON(needs.matrix.outputs.gpu) }}"
    assert "needs.matrix.outputs.gpu != '{\"include\":[]}'" in gpu["if"]  # no empty matrix
    outputs = _matrix_step(tmp_path, private="false")
    gpu_legs = json.loads(outputs["gpu"])["include"]
    assert gpu_legs == [entry for entry in json.loads(outputs["variants"])["include"]
                        if entry["platform"] == "linux/amd64"]
    assert gpu_legs


def _stub_pudev(tmp_path: Path, body: str = "") -> Path:
    """.venv/bin/pudev under `tmp_path` that logs each call's arguments, one call a line, then runs `body`."""
    pudev = tmp_path / ".venv/bin/pudev"
    pudev.parent.mkdir(parents=True, exist_ok=True)
    pudev.write_text(f'#!/bin/bash\necho "$*" >> "{tmp_path}/pudev.log"\n{body}\n')
    pudev.chmod(0o755)
    return tmp_path / "pudev.log"


CANDIDATES = {arch: f"ghcr.io/my-org/pytorch-universal-dev-candidates@sha256:{digit * 64}"
              for arch, digit in (("amd64", "a"), ("arm64", "b"))}


def _publish_env(arches: str) -> dict[str, str]:
    job = _jobs()["publish"]
    assert job["env"]["VARIANT"] == "${{ matrix.variant }}" and job["env"]["ARCHES"] == "${{ matrix.arches }}"
    assert job["env"]["PLATFORM_ARGS"] == "${{ needs.matrix.outputs.platform-args }}"
    return {"VARIANT": "cu132", "ARCHES": arches, "FIRST_RUN_ARGS": "", "PLATFORM_ARGS": ""}


def _candidates(tmp_path: Path, arches: list[str]) -> None:
    (tmp_path / "candidate").mkdir(exist_ok=True)
    for arch in arches:
        (tmp_path / "candidate" / f"cu132-{arch}.txt").write_text(CANDIDATES[arch] + "\n")


def test_publish_promotes_every_platforms_candidate_in_one_call(tmp_path: Path) -> None:
    index = "sha256:" + "c" * 64
    log = _stub_pudev(tmp_path, f'echo "promoted ghcr.io/my-org/pytorch-universal-dev@{index}: cu132, latest"')
    _candidates(tmp_path, ["amd64", "arm64"])
    env = _publish_env("amd64 arm64")
    _, candidate = _step("publish", "candidate/$VARIANT-$arch.txt")
    result = _run_step(candidate["run"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    found = _outputs(tmp_path)
    assert found["refs"] == f"{CANDIDATES['amd64']} {CANDIDATES['arm64']}"
    assert found["name"] == "ghcr.io/my-org/pytorch-universal-dev"
    assert found["arm64-digest"] == "sha256:" + "b" * 64
    _, promote = _step("publish", "pudev promote")
    assert promote["id"] == "promote" and promote["env"]["CANDIDATES"] == "${{ steps.candidate.outputs.refs }}"
    # Without a GPU runner the build writes the CPU half into the image's label, which promote reads.
    required = "${{ vars.GPU_RUNNER_LABEL == '' && '--set required_tests=cpu' || '' }}"
    assert _jobs()["build"]["env"]["REQUIRED_TESTS_ARGS"] == required
    _, build = _step("build", "pudev build")
    assert "$REQUIRED_TESTS_ARGS" in build["run"]
    result = _run_step(promote["run"], tmp_path, {**env, "CANDIDATES": found["refs"],
                                                  "PLATFORM_ARGS": "--set platforms=linux/amd64"})
    assert result.returncode == 0, result.stderr
    # One call with both digests and nothing else: the index holds exactly the candidates that were tested,
    # and they alone say what promoting them takes.
    assert log.read_text().splitlines() == [f"promote {CANDIDATES['amd64']} {CANDIDATES['arm64']}"]
    assert _outputs(tmp_path) == {"release": f"ghcr.io/my-org/pytorch-universal-dev@{index}", "digest": index}
    # A pudev that prints no released digest fails the step instead of signing nothing.
    _stub_pudev(tmp_path, "echo 'something else'")
    assert _run_step(promote["run"], tmp_path, {**env, "CANDIDATES": found["refs"]}).returncode != 0
    # A platform whose candidate is missing stops the job before promotion, naming it.
    (tmp_path / "candidate" / "cu132-arm64.txt").unlink()
    missing = _run_step(candidate["run"], tmp_path, env)
    assert missing.returncode == 1 and "No arm64 candidate" in missing.stdout


def test_each_platform_gets_its_own_sbom_on_its_released_digest(tmp_path: Path) -> None:
    log = _stub_pudev(tmp_path)
    _candidates(tmp_path, ["amd64", "arm64"])
    sbom, step = _step("publish", "pudev sbom")
    assert sbom > _step("publish", "pudev promote")[0]
    result = _run_step(step["run"], tmp_path, _publish_env("amd64 arm64"))
    assert result.returncode == 0, result.stderr
    released = {arch: ref.replace("-candidates@", "@") for arch, ref in CANDIDATES.items()}
    assert log.read_text().splitlines() == [f"sbom {released[arch]} --push --out sbom-cu132-{arch}.cdx.json"
                                            for arch in ("amd64", "arm64")]
    # Reading an arm64 image's SBOM runs it: the amd64 publish runner gets an emulator first.
    emulator, emulate = _step("publish", "qemu-user-static")
    assert emulator < sbom and emulate["if"] == "matrix.arches != 'amd64'"
    assert _jobs()["publish"]["runs-on"] == "ubuntu-24.04"
    _, upload = _step("publish", "release-${{ matrix.variant }}")
    assert "sbom-${{ matrix.variant }}-*.cdx.json" in upload["with"]["path"]


def _matrix_step(tmp_path: Path, *, private: str, arm64_runners: str = "",
                 first_run_args: str = "") -> dict[str, str]:
    """The matrix job's step as GitHub runs it, with the real pudev, for a public or private repository."""
    _, step = _step("matrix", "pudev matrix")
    assert step["env"] == {"PRIVATE": "${{ github.event.repository.private }}",
                           "ARM64_RUNNERS": "${{ vars.ARM64_RUNNERS }}"}
    pudev = tmp_path / ".venv/bin/pudev"
    pudev.parent.mkdir(parents=True, exist_ok=True)
    if not pudev.exists():
        pudev.symlink_to(BIN / "pudev")
    result = _run_step(step["run"], tmp_path, {"PRIVATE": private, "ARM64_RUNNERS": arm64_runners,
                                                "FIRST_RUN_ARGS": first_run_args, "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stdout + result.stderr
    (tmp_path / "stdout").write_text(result.stdout)
    return _outputs(tmp_path)


def _platforms(outputs: dict[str, str]) -> tuple[set[str], set[str]]:
    build = {entry["platform"] for entry in json.loads(outputs["variants"])["include"]}
    publish = {platform for entry in json.loads(outputs["publish"])["include"]
               for platform in entry["platforms"].split(",")}
    return build, publish


def test_a_public_repository_builds_and_publishes_arm64(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pudev.cli import main

    outputs = _matrix_step(tmp_path, private="false")
    assert _platforms(outputs) == ({"linux/amd64", "linux/arm64"},) * 2
    assert outputs["platform-args"] == ""
    assert (tmp_path / "github_step_summary").read_text() == ""
    assert "::warning" not in (tmp_path / "stdout").read_text()
    # Exactly what `pudev matrix` (and `--publish`) print: the matrices are never written by hand.
    assert main(["matrix"]) == 0
    assert outputs["variants"] == capsys.readouterr().out.strip()
    assert main(["matrix", "--publish"]) == 0
    assert outputs["publish"] == capsys.readouterr().out.strip()


@pytest.mark.parametrize(("private", "arm64_runners", "why"), [
    ("true", "", "this repository is private"),
    ("false", "none", "ARM64_RUNNERS is 'none'"),
])
def test_a_private_fork_skips_arm64_with_a_warning(tmp_path: Path, private: str, arm64_runners: str,
                                                   why: str) -> None:
    outputs = _matrix_step(tmp_path, private=private, arm64_runners=arm64_runners)
    build, publish = _platforms(outputs)
    assert build == publish == {"linux/amd64"}
    assert "arm64" not in outputs["variants"] and "arm64" not in outputs["publish"]
    # Every variant is still built and published, for amd64 alone.
    assert ([entry["variant"] for entry in json.loads(outputs["publish"])["include"]]
            == list(load_matrix(VARIANTS_FILE).variants))
    summary = (tmp_path / "github_step_summary").read_text()
    assert "[!WARNING]" in summary and why in summary
    assert "linux/arm64 was left out" in summary and "the published tags carry linux/amd64 only" in summary
    warning = next(line for line in (tmp_path / "stdout").read_text().splitlines() if line.startswith("::warning"))
    assert "linux/arm64 was left out" in warning
    # promote is told the same, so it does not refuse the index for a missing arm64 candidate.
    assert outputs["platform-args"] == "--set platforms=linux/amd64"
    assert _jobs()["matrix"]["outputs"]["platform-args"] == "${{ steps.matrix.outputs.platform-args }}"
    for job in ("build", "publish"):
        assert _jobs()[job]["env"]["PLATFORM_ARGS"] == "${{ needs.matrix.outputs.platform-args }}"


def test_a_private_forks_first_run_is_amd64_only_too(tmp_path: Path) -> None:
    outputs = _matrix_step(tmp_path, private="true", first_run_args=_first_run_args())
    assert _platforms(outputs) == ({"linux/amd64"},) * 2
    (entry,) = json.loads(outputs["variants"])["include"]
    assert entry["image"].endswith("pytorch-universal-dev-first-run")


# --- The proof in shards: one CI leg per shard of tests/e2e/shards.py, each running the make target a developer
# runs for that shard, so a local shard and its CI job run the same target; `make test-all` (.ci/run) runs them all.

MAKEFILE = REPO_ROOT / "Makefile"
CI_RUN = REPO_ROOT / ".ci/run"
# The forms of expression the proof job writes: a plain `${{ NAME }}` in text, or a whole value
# `LEFT ==|!= 'VALUE' && 'THEN' || ELSE`, ELSE a 'literal' or a format('...{0}...', NAME). What GitHub does with
# anything else, this test does not guess.
CHOICE = re.compile(r"\$\{\{ (?P<left>[\w.-]+) (?P<op>==|!=) '(?P<right>[^']*)' && '(?P<then>[^']+)' \|\| "
                    r"(?P<otherwise>.+) \}\}")


def _make_target(shard: str) -> str:
    """The Makefile target of a shard: `test` is the newest line's, every other one is test-SHARD."""
    return "test" if shard == NEWEST else f"test-{shard}"


def _recipe(makefile: str, target: str) -> list[str] | None:
    """The recipe of the explicit rule `TARGET:` (its tab-indented lines), or None where there is no such rule."""
    match = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*(?:\n|$))*)", makefile, flags=re.MULTILINE)
    return [line.strip() for line in match.group(1).splitlines()] if match else None


def _choose(expression: str, context: dict[str, str]) -> str:
    """A `${{ }}` expression of the proof job, evaluated as GitHub does, with `context` for its names."""
    match = CHOICE.fullmatch(expression)
    if not match:  # text with plain names in it: `test-times-${{ matrix.shard }}`
        text = re.sub(r"\$\{\{ ([\w.-]+) \}\}", lambda name: context[name.group(1)], expression)
        assert "${{" not in text, f"not a form this test reads: {expression}"
        return text
    holds = (context[match["left"]] == match["right"]) == (match["op"] == "==")
    if holds:
        return match["then"]
    literal = re.fullmatch(r"'([^']*)'", match["otherwise"])
    if literal:
        return literal.group(1)
    formatted = re.fullmatch(r"format\('([^']*)', ([\w.-]+)\)", match["otherwise"])
    assert formatted, f"not a form this test reads: {expression}"
    return formatted.group(1).replace("{0}", context[formatted.group(2)])


def _proof_legs(job: dict[str, Any], platform_args: str) -> list[dict[str, Any]]:
    """The proof job's legs as GitHub expands them for the matrix job's `platform-args`: each leg's shard, its
    runner, the commands of its run steps (with the step's env substituted) and its artifact's name and path."""
    matrix = job["strategy"]["matrix"]
    legs = []
    for shard in matrix["shard"]:
        context = {"matrix.shard": shard, "needs.matrix.outputs.platform-args": platform_args}
        if any(all(_choose(value, context) == {"shard": shard}.get(key) for key, value in entry.items())
               for entry in matrix.get("exclude", [])):
            continue
        commands = []
        for step in job["steps"]:
            run = str(step.get("run", ""))
            for name, value in (step.get("env") or {}).items():
                run = run.replace(f'"${name}"', _choose(value, context)).replace(f"${name}", _choose(value, context))
            commands += [shlex.split(line) for line in run.splitlines() if line.strip()]
        uploads = [{key: _choose(str(value), context) for key, value in step["with"].items()}
                   for step in job["steps"] if str(step.get("uses", "")).startswith("actions/upload-artifact@")]
        legs.append({"shard": shard, "runner": _choose(job["runs-on"], context), "commands": commands,
                     "uploads": uploads})
    return legs


def _proof_problems(job: dict[str, Any], makefile: str, shards: tuple[str, ...] = SHARDS) -> list[str]:
    """What keeps the proof job from being the shards: each shard one leg, on its platform's runner, running
    `make` with the shard's target alone, that target running that shard and uploading the times it writes."""
    problems = []
    if [str(shard) for shard in job["strategy"]["matrix"]["shard"]] != list(shards):
        problems.append(f"the proof matrix lists {job['strategy']['matrix']['shard']}, not SHARDS {list(shards)}")
    legs = _proof_legs(job, platform_args="")  # a public repository: every shard has its leg
    for shard in shards:
        mine = [leg for leg in legs if leg["shard"] == shard]
        if len(mine) != 1:
            problems.append(f"{shard} has {len(mine)} proof legs")
            continue
        (leg,) = mine
        target = _make_target(shard)
        # `make TARGET`, as root through sudo where the step runs it so (`sudo -E env PATH=... make TARGET`).
        makes = [command[command.index("make"):] for command in leg["commands"] if "make" in command]
        if makes != [["make", target]]:
            problems.append(f"{shard}'s leg runs {makes}, not make {target}")
        runner = RUNNERS["linux/arm64" if shard == ARM64 else "linux/amd64"]
        if leg["runner"] != runner:
            problems.append(f"{shard}'s leg runs on {leg['runner']}, not {runner}")
        recipe = _recipe(makefile, target)
        if recipe is None:
            problems.append(f"the Makefile has no target {target}")
            continue
        report = f"reports/test-times-{shard}.json"
        if not any(f"--shard={shard} " in f"{line} " and f"--times-report={report}" in line for line in recipe):
            problems.append(f"make {target} does not run --shard={shard} writing {report}: {recipe}")
        if [(upload["name"], upload["path"]) for upload in leg["uploads"]] != [(f"test-times-{shard}", report)]:
            problems.append(f"{shard}'s leg uploads {leg['uploads']}, not {report} as test-times-{shard}")
    return problems


def _test_all_problems(makefile: str, ci_run: str, shards: tuple[str, ...] = SHARDS) -> list[str]:
    """`make test-all` runs every shard's target, in SHARDS' order, and .ci/run ends by running `make test` and
    then only shard targets (the shards this machine's CI can afford: .ci/run says which, and why)."""
    problems = []
    runs = _recipe(makefile, "test-all")
    if runs != [f"$(MAKE) {_make_target(shard)}" for shard in shards]:
        problems.append(f"make test-all runs {runs}")
    last = [line.strip() for line in ci_run.splitlines() if line.strip()][-1]
    called = re.fullmatch(r"(?:exec )?make ((?:[\w-]+ ?)+)", last)
    targets = called.group(1).split() if called else []
    if targets[:1] not in (["test"], ["test-all"]) or not set(targets) <= {
            *(_make_target(shard) for shard in shards), "test-all"}:
        problems.append(f".ci/run ends with {last!r}, not make test (or test-all) and shard targets")
    return problems


def test_every_shard_is_one_proof_leg_running_its_make_target() -> None:
    assert SHARDS and _proof_problems(_jobs()["proof"], MAKEFILE.read_text()) == []


def test_make_test_all_runs_every_shard_and_ci_runs_make_test_first() -> None:
    assert _test_all_problems(MAKEFILE.read_text(), CI_RUN.read_text()) == []


def test_the_shard_checks_fail_for_a_shard_without_its_leg_or_target() -> None:
    """The same checks on altered copies: a shard the workflow leaves out, a leg that runs another target or on
    another runner, a target that runs another shard, a test-all or a .ci/run that skips one."""
    makefile, ci_run = MAKEFILE.read_text(), CI_RUN.read_text()
    job = _jobs()["proof"]
    job["strategy"]["matrix"]["shard"] = [shard for shard in SHARDS if shard != PODMAN]
    assert "podman has 0 proof legs" in _proof_problems(job, makefile)
    job = _jobs()["proof"]
    job["strategy"]["matrix"]["shard"].append(PODMAN)
    assert "podman has 2 proof legs" in _proof_problems(job, makefile)
    job = _jobs()["proof"]
    make, step = _step("proof", "make ")
    step["env"] = {name: value.replace("'newest'", "'latest'") for name, value in step["env"].items()}
    job["steps"][make] = step
    assert _proof_problems(job, makefile) == ["newest's leg runs [['make', 'test-newest']], not make test"]
    job = _jobs()["proof"]
    job["runs-on"] = "ubuntu-24.04"
    assert _proof_problems(job, makefile) == ["arm64's leg runs on ubuntu-24.04, not ubuntu-24.04-arm"]
    wrong = makefile.replace("--shard=2024 ", "--shard=arm64 ")
    assert wrong != makefile and [problem.split(":")[0] for problem in _proof_problems(_jobs()["proof"], wrong)] == [
        "make test-2024 does not run --shard=2024 writing reports/test-times-2024.json"]
    assert _proof_problems(_jobs()["proof"], makefile, (*SHARDS, "riscv64")) != []
    skipped = makefile.replace("\t$(MAKE) test-arm64\n", "")
    assert skipped != makefile and _test_all_problems(skipped, ci_run) != []
    last = [line for line in ci_run.splitlines() if line.strip()][-1]
    assert _test_all_problems(makefile, ci_run.replace(last, "exec make check")) != []
    assert _test_all_problems(makefile, ci_run.replace(last, "exec make test-2024 test")) != []


def test_the_proof_job_runs_as_ci_does_and_holds_nothing_it_could_leak() -> None:
    job = _jobs()["proof"]
    assert set(job["needs"]) == {"matrix", "checks"}
    assert job["permissions"] == {"contents": "read"} and "secrets." not in json.dumps(job)
    assert job["strategy"]["fail-fast"] is False and "if" not in job  # pull requests too
    # .ci/run's settings, the same names and values.
    exports = dict(re.findall(r"^export (\w+)=(\S+)$", CI_RUN.read_text(), flags=re.MULTILINE))
    assert set(exports) == {"PUDEV_REQUIRE_ENGINE", "PUDEV_DISRUPTIVE_TESTS", "PUDEV_REPLACE_ENGINE", "CI"}
    assert job["env"] == exports
    # First, room on the runner, as the build job makes it; then a checkout that keeps no token.
    steps = job["steps"]
    _, room = _step("build", "Make room")
    assert steps[0]["run"] == room["run"] and "/usr/share/dotnet" in room["run"]
    assert steps[1]["uses"].startswith("actions/checkout@") and steps[1]["with"] == {"persist-credentials": False}
    # Its times come back even from a failed shard, and a re-run of a leg may upload them again.
    (upload,) = [step for step in steps if str(step.get("uses", "")).startswith("actions/upload-artifact@")]
    assert upload["if"] == "${{ !cancelled() }}" and upload["with"]["overwrite"] is True


@pytest.mark.parametrize(("private", "arm64_runners"), [("true", ""), ("false", "none")])
def test_where_arm64_is_left_out_so_is_its_shard_with_the_same_warning(tmp_path: Path, private: str,
                                                                       arm64_runners: str) -> None:
    outputs = _matrix_step(tmp_path, private=private, arm64_runners=arm64_runners)
    legs = [leg["shard"] for leg in _proof_legs(_jobs()["proof"], outputs["platform-args"])]
    assert legs == [shard for shard in SHARDS if shard != ARM64]
    assert "the proof's arm64 shard is skipped" in (tmp_path / "github_step_summary").read_text()


def test_a_public_repository_proves_every_shard(tmp_path: Path) -> None:
    outputs = _matrix_step(tmp_path, private="false")
    assert [leg["shard"] for leg in _proof_legs(_jobs()["proof"], outputs["platform-args"])] == list(SHARDS)


NEW_TORCH = REPO_ROOT / ".github/workflows/new-torch.yml"


def test_every_workflow_pins_the_reviewed_releases() -> None:
    for path in WORKFLOWS:
        for line in path.read_text().splitlines():
            match = re.search(r"uses:\s*([\w./-]+)@([0-9a-f]{40})\s*#\s*(v[\d.]+)\s*$", line)
            if match:
                action, sha, release = match.groups()
                assert (sha, release) == PINS.get(action), f"{path.name}: {action}@{sha} # {release}"


def test_release_day_asks_daily_and_moves_only_when_ready() -> None:
    """The daily check decides (tests/e2e/test_release_day.py runs its step against a registry); the move job,
    the only one that may write, runs for `ready` alone, so `waiting` opens nothing."""
    workflow = _workflow(NEW_TORCH)
    triggers = workflow.get("on") or workflow[True]
    assert "schedule" in triggers and "workflow_dispatch" in triggers
    check, move = workflow["jobs"]["check"], workflow["jobs"]["move"]
    step = next(step for step in check["steps"] if step.get("id") == "check")
    assert "pudev new-torch --check" in step["run"] and "GITHUB_STEP_SUMMARY" in step["run"]
    assert check["permissions"] == {"contents": "read"}
    assert move["needs"] == "check" and move["if"] == "needs.check.outputs.status == 'ready'"
    assert move["permissions"] == {"contents": "write", "pull-requests": "write"}
    runs = "\n".join(step.get("run", "") for step in move["steps"])
    assert 'pudev new-torch "$VERSION"' in runs and "gh pr create" in runs and "gh pr list" in runs


def test_the_release_day_step_refuses_a_line_without_a_status(tmp_path: Path) -> None:
    step = next(step for step in _workflow(NEW_TORCH)["jobs"]["check"]["steps"] if step.get("id") == "check")
    pudev = tmp_path / ".venv/bin/pudev"
    pudev.parent.mkdir(parents=True)
    pudev.write_text("#!/bin/sh\necho 'something else happened'\n")
    pudev.chmod(0o755)
    failed = _run_step(step["run"], tmp_path, {"VERSION": "", "NEW_TORCH_REGISTRY": ""})
    assert failed.returncode != 0 and "printed no status" in failed.stdout + failed.stderr
    pudev.write_text("#!/bin/sh\necho 'pudev: error: the index is down' >&2\nexit 2\n")
    broken = _run_step(step["run"], tmp_path, {"VERSION": "", "NEW_TORCH_REGISTRY": ""})
    assert broken.returncode != 0 and (tmp_path / "github_output").read_text() == ""


def _move_step(name: str) -> str:
    return str(next(step for step in _workflow(NEW_TORCH)["jobs"]["move"]["steps"]
                    if step.get("name", "").startswith(name))["run"])


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, check=True).stdout


def test_a_failed_move_fails_its_step_under_githubs_default_shell(tmp_path: Path) -> None:
    """GitHub runs a `run:` without `shell:` as `bash -e`: no pipefail, so `pudev ... | tee` would pass."""
    pudev = tmp_path / ".venv/bin/pudev"
    pudev.parent.mkdir(parents=True)
    pudev.write_text("#!/bin/sh\necho 'pudev: error: new-torch stopped at the locks step' >&2\nexit 2\n")
    pudev.chmod(0o755)
    (tmp_path / "step.sh").write_text(_move_step("Move what is ready"))
    result = subprocess.run(["bash", "--noprofile", "--norc", "-e", str(tmp_path / "step.sh")], cwd=tmp_path,
                            env={"PATH": "/usr/bin:/bin", "VERSION": "9.9.0"}, capture_output=True, text=True,
                            check=False)
    assert result.returncode != 0, result.stdout + result.stderr


def test_the_pull_request_carries_every_file_the_move_wrote_over_a_stale_branch(tmp_path: Path) -> None:
    """Staged by asking git (README.zh-CN.md, a new lock, a removed one), pushed over the branch a closed pull
    request left behind, then opened."""
    origin, work = tmp_path / "origin.git", tmp_path / "work"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    for name in ("README.zh-CN.md", "requirements/lock/torch9.8.0-py3.12.txt"):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text("before\n")
    _git(work, "add", "-A")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start")
    _git(work, "remote", "add", "origin", str(origin))
    _git(work, "push", "-q", "origin", "main")
    _git(work, "switch", "-qc", "stale")  # the branch a closed, unmerged pull request left behind
    _git(work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "old")
    _git(work, "push", "-q", "origin", "stale:new-torch/9.9.0")
    _git(work, "switch", "-q", "main")
    (work / "README.zh-CN.md").write_text("after\n")
    (work / "requirements/lock/torch9.8.0-py3.12.txt").unlink()
    (work / "requirements/lock/torch9.9.0-py3.12.txt").write_text("new\n")
    (work / "move.txt").write_text("ready 9.9.0: moves cu999\n")
    gh = tmp_path / "bin/gh"
    gh.parent.mkdir()
    gh.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path / 'gh.txt'}\n")
    gh.chmod(0o755)
    # The script lies outside the checkout, as GitHub's does.
    (tmp_path / "step.sh").write_text(_move_step("Open the pull request"))
    result = subprocess.run(["bash", "--noprofile", "--norc", "-e", str(tmp_path / "step.sh")], cwd=work,
                            capture_output=True, text=True, check=False,
                            env={"PATH": f"{gh.parent}:/usr/bin:/bin", "VERSION": "9.9.0", "OWN_TOKEN": "false",
                                 "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"), "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stdout + result.stderr
    changed = _git(origin, "diff", "--name-status", "main", "new-torch/9.9.0").split("\n")
    assert set(filter(None, changed)) == {"M\tREADME.zh-CN.md", "D\trequirements/lock/torch9.8.0-py3.12.txt",
                                          "A\trequirements/lock/torch9.9.0-py3.12.txt"}
    assert "pr create --head new-torch/9.9.0" in (tmp_path / "gh.txt").read_text()


# --- What a fork must set up: every name the workflows read is in the fork notes, and the runs warn where a
# missing setting would otherwise pass in silence.

FORKING = REPO_ROOT / "docs/publishing/forking.md"
# `vars.X`, `secrets.X`, `inputs.X` (also `github.event.inputs.X`), and the index form `vars['X']`.
REFERENCE = re.compile(r"\b(vars|secrets|inputs)\s*(?:\.\s*([A-Za-z_][\w-]*)|\[\s*['\"]([^'\"]+)['\"]\s*\])")


def _strings(node: object) -> list[str]:
    """Every string in a parsed workflow, keys and values (comments are not read: they reference nothing)."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [text for key, value in node.items() for text in _strings(key) + _strings(value)]
    if isinstance(node, list):
        return [text for item in node for text in _strings(item)]
    return []


def _references(workflows: list[dict[Any, Any]]) -> dict[str, set[str]]:
    """The names each kind (vars, secrets, inputs) is read under, across the parsed workflows."""
    found: dict[str, set[str]] = {"vars": set(), "secrets": set(), "inputs": set()}
    for workflow in workflows:
        for text in _strings(workflow):
            for kind, dotted, indexed in REFERENCE.findall(text):
                found[kind].add(dotted or indexed)
    return found


def _named_in_tables(page: str) -> set[str]:
    """The `names` in the first cell of each table row of a page: what its tables explain."""
    cells = [line.split("|")[1] for line in page.splitlines() if line.startswith("|") and line.count("|") > 2]
    return {name for cell in cells for name in re.findall(r"`([^`]+)`", cell)}


def _unexplained(workflows: list[dict[Any, Any]], page: str) -> list[str]:
    """Each `vars.X`, `secrets.X` and `inputs.X` the workflows read that the page's tables never name."""
    named = _named_in_tables(page)
    return sorted(f"{kind}.{name}" for kind, names in _references(workflows).items() for name in names
                  if name not in named)


def test_the_fork_notes_name_every_secret_variable_and_input_the_workflows_read() -> None:
    """A secret or variable added to a workflow without a row in docs/publishing/forking.md fails here, so a fork
    never meets one only when its run breaks."""
    workflows = [_workflow(path) for path in WORKFLOWS]
    found = _references(workflows)
    # What the workflows read today (so the parsing itself is checked too): a change here is a new row.
    assert found["secrets"] >= {"CANDIDATE_REGISTRY_TOKEN", "NEW_TORCH_TOKEN"}
    assert found["vars"] >= {"GPU_RUNNER_LABEL", "ARM64_RUNNERS", "NEW_TORCH_REGISTRY", "NEW_TORCH_INDEX"}
    assert found["inputs"] >= {"first-run", "version"}
    missing = _unexplained(workflows, FORKING.read_text())
    assert not missing, f"the workflows read {missing}, which no table row of {FORKING.name} names: add one"


def test_the_fork_notes_check_fails_for_a_name_they_leave_out() -> None:
    """The same check on a workflow that reads a variable, a secret and an input the notes do not name."""
    workflow = _workflow(NEW_TORCH)
    step = {"run": "true", "if": "vars['NEW_SWITCH'] != ''",
            "env": {"A": "${{ vars.NEW_VARIABLE }}", "B": "${{ secrets.NEW_SECRET }}",
                    "C": "${{ github.event.inputs.new-input }}"}}
    workflow["jobs"]["check"]["steps"].append(step)
    assert _unexplained([workflow], FORKING.read_text()) == [
        "inputs.new-input", "secrets.NEW_SECRET", "vars.NEW_SWITCH", "vars.NEW_VARIABLE"]
    # A name written only in prose, not in a table row, does not count as explained.
    assert _unexplained([_workflow(NEW_TORCH)], "`NEW_TORCH_TOKEN` is explained in a sentence.\n") != []


def test_the_fork_notes_say_how_to_turn_release_day_on() -> None:
    page = FORKING.read_text()
    for needed in ("gh workflow enable new-torch.yml", "Enable workflow", "60 days without activity",
                   "Allow GitHub Actions to create and approve pull requests", "ubuntu-24.04-arm",
                   "github.event.repository.fork"):
        assert needed in page, needed
    # The setting is spelled as the workflow that needs it spells it.
    assert "Allow GitHub Actions to create and approve pull requests" in NEW_TORCH.read_text()
    # The scheduled workflow the notes name is the one that has a schedule.
    scheduled = [path.name for path in WORKFLOWS if "schedule" in (_workflow(path).get("on") or _workflow(path)[True])]
    assert scheduled == ["new-torch.yml"]


def _schedule_step() -> dict[str, Any]:
    _, step = _step("matrix", "actions/workflows/new-torch.yml")
    return step


def _run_schedule_step(tmp_path: Path, gh_body: str, fork: str) -> tuple[subprocess.CompletedProcess[str], str]:
    step = _schedule_step()
    gh = tmp_path / "bin/gh"
    gh.parent.mkdir(exist_ok=True)
    gh.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path / 'gh.txt'}\n{gh_body}\n")
    gh.chmod(0o755)
    result = _run_step(step["run"], tmp_path, {"PATH": f"{gh.parent}:/usr/bin:/bin", "GH_TOKEN": "t",
                                                "REPOSITORY": "Some-Owner/pytorch-universal-dev", "FORK": fork})
    return result, (tmp_path / "github_step_summary").read_text()


def test_the_matrix_job_reads_release_days_state_and_holds_no_more_than_that() -> None:
    job = _jobs()["matrix"]
    assert job["permissions"] == {"contents": "read", "actions": "read"}
    step = _schedule_step()
    assert _never_for_pull_requests(step["if"])
    assert step["env"] == {"GH_TOKEN": "${{ github.token }}", "REPOSITORY": "${{ github.repository }}",
                           "FORK": "${{ github.event.repository.fork }}"}
    # After the matrices: a warning never stands in the way of the build.
    assert _step("matrix", "pudev matrix")[0] < _steps("matrix").index(step)


@pytest.mark.parametrize(("state", "fork", "why"), [
    ("disabled_fork", "true", "GitHub turns scheduled workflows off in a new fork"),
    ("disabled_inactivity", "false", "after 60 days without activity"),
    ("disabled_manually", "false", "new-torch.yml is off (disabled_manually)"),
])
def test_a_release_day_that_is_off_is_a_warning_in_the_run_and_its_summary(tmp_path: Path, state: str, fork: str,
                                                                           why: str) -> None:
    result, summary = _run_schedule_step(tmp_path, f"echo {state}", fork)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "gh.txt").read_text().split() == [
        "api", "repos/Some-Owner/pytorch-universal-dev/actions/workflows/new-torch.yml", "--jq", ".state"]
    warning = result.stdout.strip()
    assert warning.startswith("::warning title=Release day's schedule is off::") and why in warning
    assert "gh workflow enable new-torch.yml" in warning and "Actions > new-torch > Enable workflow" in warning
    assert summary.startswith("> [!WARNING]\n> ") and why in summary


@pytest.mark.parametrize("fork", ["true", "false"])
def test_an_active_release_day_says_nothing(tmp_path: Path, fork: str) -> None:
    result, summary = _run_schedule_step(tmp_path, "echo active", fork)
    assert result.returncode == 0 and result.stdout == "" and summary == ""


def test_a_state_that_cannot_be_read_warns_a_fork_only(tmp_path: Path) -> None:
    broken = "echo 'HTTP 403: Resource not accessible by integration' >&2; exit 1"
    result, summary = _run_schedule_step(tmp_path, broken, "true")
    assert result.returncode == 0, result.stderr
    assert "This repository is a fork" in result.stdout and "could not be read" in summary
    assert "gh workflow enable new-torch.yml" in summary
    upstream, upstream_summary = _run_schedule_step(tmp_path, broken, "false")
    assert upstream.returncode == 0 and upstream.stdout == "" and upstream_summary == ""


def _gpu_note_step() -> tuple[int, dict[str, Any]]:
    return _step("publish", "promoted without a GPU half")


def _run_gpu_note(tmp_path: Path, label: str, arches: str) -> tuple[subprocess.CompletedProcess[str], str]:
    _, step = _gpu_note_step()
    release = "ghcr.io/some-owner/pytorch-universal-dev@sha256:" + "a" * 64
    result = _run_step(step["run"], tmp_path, {"VARIANT": "cu132", "ARCHES": arches, "GPU_RUNNER_LABEL": label,
                                                "RELEASE": release})
    return result, (tmp_path / "github_step_summary").read_text()


def test_the_gpu_note_follows_promotion_on_every_real_publish() -> None:
    index, step = _gpu_note_step()
    promote, _ = _step("publish", "pudev promote")
    assert index == promote + 1  # said as soon as the tags moved, before anything else can fail
    assert step["if"] == "${{ !inputs.first-run }}"  # the stand-in needs the CPU half only, by design
    assert step["env"] == {"RELEASE": "${{ steps.promote.outputs.release }}",
                           "GPU_RUNNER_LABEL": "${{ vars.GPU_RUNNER_LABEL }}"}
    # The same variable that decides the build's required halves and whether the GPU job runs.
    assert "vars.GPU_RUNNER_LABEL == ''" in _jobs()["build"]["env"]["REQUIRED_TESTS_ARGS"]
    assert "vars.GPU_RUNNER_LABEL != ''" in _jobs()["gpu-test"]["if"]


@pytest.mark.parametrize("arches", ["amd64", "amd64 arm64"])
def test_promoting_without_a_gpu_runner_is_a_warning(tmp_path: Path, arches: str) -> None:
    result, summary = _run_gpu_note(tmp_path, "", arches)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("::warning title=cu132 promoted without a GPU half::cu132 was promoted (ghcr.io/")
    assert "GPU_RUNNER_LABEL is empty" in result.stdout and "no test ran on a GPU" in result.stdout
    assert summary.startswith("> [!WARNING]\n> cu132 was promoted") and "GPU_RUNNER_LABEL" in summary


def test_with_a_gpu_runner_only_the_arm64_image_is_noted(tmp_path: Path) -> None:
    result, summary = _run_gpu_note(tmp_path, "gpu-h100", "amd64 arm64")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("::notice title=cu132 on arm64 without a GPU half::")
    assert "[!NOTE]" in summary and "linux/arm64" in summary
    quiet, quiet_summary = _run_gpu_note(tmp_path, "gpu-h100", "amd64")
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet_summary == ""


def _zstd_registry(tmp_path: Path, twin_configs: list[str], twin_layer: str = OCI_ZSTD_LAYER) -> dict[str, str]:
    """skopeo and docker stubs on PATH for the zstd step: a registry of files (the release index of an amd64 and
    an arm64 image, and the twin BuildKit pushed), each call logged; the step's environment."""
    repository, digest = "ghcr.io/my-org/pytorch-universal-dev", {name: "sha256:" + name * 64 for name in "abcdef"}
    documents = {digest["c"]: {"manifests": [{"digest": digest["a"]}, {"digest": digest["b"]}]},
                 digest["a"]: {"config": {"digest": "sha256:amd64config"}, "layers": [{"mediaType": "gzip"}]},
                 digest["b"]: {"config": {"digest": "sha256:arm64config"}, "layers": [{"mediaType": "gzip"}]},
                 digest["e"]: {"manifests": [{"digest": digest["f"]}, {"digest": digest["d"]}]},
                 **{digest[name]: {"config": {"digest": config}, "layers": [{"mediaType": twin_layer}]}
                    for name, config in zip("fd", twin_configs, strict=True)}}
    configs = {digest["a"]: {"os": "linux", "architecture": "amd64"},
               digest["b"]: {"os": "linux", "architecture": "arm64", "variant": "v8"}}
    store, bin_dir = tmp_path / "registry", tmp_path / "bin"
    store.mkdir()
    bin_dir.mkdir()
    for key, document in documents.items():
        (store / key).write_text(json.dumps(document))
    for key, config in configs.items():
        (store / f"{key}.config").write_text(json.dumps(config))
    log = tmp_path / "calls.log"
    (bin_dir / "skopeo").write_text(f'#!/bin/bash\necho "skopeo $*" >> {log}\n[ "$1" = inspect ] || exit 0\n'
                                    f'ref=${{*: -1}}\nfile={store}/${{ref##*@}}\n'
                                    '[[ " $* " == *" --config "* ]] && file=$file.config\ncat "$file"\n')
    (bin_dir / "docker").write_text(f'#!/bin/bash\necho "docker $*" >> {log}\n[ "$2" = build ] || exit 0\n'
                                    f'echo "stdin: $(cat)" >> {log}\n'
                                    f'echo \'{{"containerimage.digest": "{digest["e"]}"}}\' > zstd.json\n')
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    (tmp_path / "promote.txt").write_text(f"promoted {repository}@{digest['c']}: cu132, cu132-20261201, latest\n")
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "RELEASE": f"{repository}@{digest['c']}", "VARIANT": "cu132"}


def test_the_zstd_twin_is_buildkits_export_of_the_release_tagged_only_with_the_tested_configs(tmp_path: Path) -> None:
    """BuildKit (a docker-container builder) exports `FROM RELEASE` for every platform RELEASE holds, all zstd
    under OCI media types, pushed by digest; the -zstd tags are set only when its configs are the tested ones."""
    _, step = _step("publish", "force-compression=true")
    assert step["id"] == "zstd" and step["env"] == {"RELEASE": "${{ steps.promote.outputs.release }}"}
    assert ".venv/bin/pudev" not in step["run"]  # the tested config is kept by BuildKit, checked here
    env = _zstd_registry(tmp_path, ["sha256:arm64config", "sha256:amd64config"])
    result = _run_step(step["run"], tmp_path, env)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    build = next(call for call in calls if call.startswith("docker buildx build"))
    assert "--builder pudev-zstd --platform linux/amd64,linux/arm64/v8 --provenance=false --sbom=false" in build
    assert build.endswith(" --output type=registry,name=ghcr.io/my-org/pytorch-universal-dev,push-by-digest=true,"
                          "compression=zstd,force-compression=true,oci-mediatypes=true -")
    assert f"stdin: FROM {env['RELEASE']}" in calls
    assert calls.index("docker buildx create --name pudev-zstd --driver docker-container") < calls.index(build)
    assert "docker buildx rm pudev-zstd" in calls
    twin = "ghcr.io/my-org/pytorch-universal-dev@sha256:" + "e" * 64
    assert [call for call in calls if call.startswith("skopeo copy")] == [
        f"skopeo copy --all --preserve-digests docker://{twin} docker://ghcr.io/my-org/pytorch-universal-dev:{tag}-zstd"
        for tag in ("cu132", "cu132-20261201", "latest")]
    assert _outputs(tmp_path) == {"release": twin}


@pytest.mark.parametrize(("configs", "layer", "says"), [
    (["sha256:arm64config", "sha256:rewritten"], OCI_ZSTD_LAYER, "The zstd twin has other configs"),
    (["sha256:arm64config"] * 2, OCI_ZSTD_LAYER, "The zstd twin has other configs"),  # a platform lost
    (["sha256:arm64config", "sha256:amd64config"], "application/vnd.oci.image.layer.v1.tar+gzip",
     "The zstd twin is not all zstd"),
])
def test_a_twin_with_another_config_or_layer_fails_in_one_line_before_any_tag(tmp_path: Path, configs: list[str],
                                                                                layer: str, says: str) -> None:
    _, step = _step("publish", "force-compression=true")
    result = _run_step(step["run"], tmp_path, _zstd_registry(tmp_path, configs, layer))
    assert result.returncode == 1
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"::error title={says}::") and "no -zstd tag was set" in line
    assert "skopeo copy" not in (tmp_path / "calls.log").read_text()
    assert (tmp_path / "github_output").read_text() == ""
