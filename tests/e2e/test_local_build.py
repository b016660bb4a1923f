"""Every stand-in build through the production Dockerfile, and the in-image suite run inside
each, each in its own shard (shards.py): today's line (`local-current`), the 2024 line (`local`),
and today's on arm64 under binfmt emulation (`local-current@linux/arm64`), where its platform
scope runs (the CPU tests marked `platform`: the whole CPU half takes 27 minutes emulated, and
CI's native arm64 runner runs it)."""

from __future__ import annotations

import json
import random
import re
import shutil
import tempfile
from pathlib import Path
from xml.etree import ElementTree

import kept_between_runs
import pytest
from container_logs import LogWatch
from e2e_support import (
    LocalImage,
    Profiles,
    build_context_copy,
    emulated,
    lock_in,
    profile_variant,
    run_pudev,
    standin_builds,
)
from shards import LINE_2024, builds_of, by_shard, newest_profile

from pudev.building.requirement_locks import rarely_changing_path
from pudev.common.lock_file import PARTS, names_in, read_pins
from pudev.config.profiles import profile_names
from pudev.engine import docker

pytestmark = [pytest.mark.engine, pytest.mark.slow]
CACHE_PROBE_IMAGE = "pudev-cacheprobe/pytorch-universal-dev"
PROFILES = profile_names()
BUILDS = standin_builds()  # each profile here, then on every other platform its variant is built for
NATIVE_BUILDS = [build for build in BUILDS if not emulated(build)]
EMULATED_BUILDS = [build for build in BUILDS if emulated(build)]
# What the platform scope must hold, as the arm64 issue asks: a real CUDA extension built by the
# platform's nvcc, and each toolkit's nvcc compiling, linking and running with its host compiler.
PROOF_MUST_RUN = ("test_extension.test_cuda_extension_builds_and_its_host_entry_point_runs",
                  "test_extension.test_nvcc_compiles_and_links_with_the_selected_host_compiler[0]",
                  "test_extension.test_nvcc_compiles_and_links_with_the_selected_host_compiler[1]")


@pytest.mark.parametrize("profile", by_shard(BUILDS))
def test_the_image_records_the_variant_it_was_built_as(profiles: Profiles, profile: str) -> None:
    variant = profile_variant(profile)
    # --platform: another platform's image runs (under emulation), and the engine says nothing about it.
    run = ["run", "--rm", "--platform", variant.platform, profiles.image(profile).tag]
    record = json.loads(docker.run([*run, "pudev", "record"]).stdout)
    assert (record["variant"], record["cuda"], record["torch"], record["python"]) == (
        variant.name, variant.cuda, variant.torch, variant.python)
    assert record["cxx_standard"] == variant.cxx_standard
    assert record["default_toolkit"] == variant.default_toolkit
    assert [(t["version"], t["arch_list"]) for t in record["toolkits"]] == [
        (t.version, t.arch_list) for t in variant.toolkits]
    inputs = record["inputs"]
    assert inputs["base"]["source"] == variant.base_image and inputs["base"]["digest"].startswith("sha256:")
    for toolkit in variant.toolkits:
        assert inputs[f"toolkit {toolkit.version}"]["digest"].startswith("sha256:")
    assert inputs["lock"]["source"] == f"requirements/lock/{variant.lock}.txt"
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", inputs["lock"]["digest"])
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", record["revision"])
    assert record["platform"] == variant.platform and record["base"] == variant.base
    machine = docker.run([*run, "uname", "-m"]).stdout.strip()
    assert machine == {"linux/amd64": "x86_64", "linux/arm64": "aarch64"}[variant.platform]


def _outcomes(junit: Path) -> dict[str, str]:
    """Each test case of a JUnit report (module.test) and how it ended: passed, failed, or skipped: REASON."""
    outcomes: dict[str, str] = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}.{case.get('name')}"
        skipped = case.find("skipped")
        if skipped is not None:
            outcomes[name] = "skipped: " + (skipped.get("message") or "")
        elif case.find("failure") is not None or case.find("error") is not None:
            outcomes[name] = "failed"
        else:
            outcomes[name] = "passed"
    return outcomes


@pytest.mark.parametrize("profile", by_shard(NATIVE_BUILDS))
def test_image_suite_passes_and_only_gpu_checks_skip(profiles: Profiles, profile: str,
                                                     quiet_container_logs: LogWatch) -> None:
    suite = profiles.suite(profile)
    assert suite.returncode == 0, suite.output[-11000:]
    quiet_container_logs.scan("pudev test", suite.output)  # the container's output, streamed through pudev
    outcomes = _outcomes(suite.junit)
    # GPU checks: test_gpu.py, and gpu-marked tests elsewhere (the in-image conftest lets only those skip).
    gpu = {name: outcome for name, outcome in outcomes.items()
           if ".test_gpu." in f".{name}" or "no GPU visible" in outcome}
    others = {name: outcome for name, outcome in outcomes.items() if name not in gpu}
    assert len(others) >= 20 and all(outcome == "passed" for outcome in others.values()), others
    # No GPU here: every GPU test must have skipped, with the reason; none passed vacuously.
    assert len(gpu) >= 5
    assert all(outcome.startswith("skipped: ") and "no GPU visible" in outcome for outcome in gpu.values()), gpu


@pytest.mark.parametrize("build", by_shard(EMULATED_BUILDS))
def test_the_platform_scope_passes_under_emulation(profiles: Profiles, build: str,
                                                   quiet_container_logs: LogWatch) -> None:
    suite = profiles.suite(build)
    assert suite.returncode == 0, suite.output[-11000:]
    quiet_container_logs.scan("pudev test", suite.output)
    outcomes = _outcomes(suite.junit)
    assert len(outcomes) >= 20 and all(outcome == "passed" for outcome in outcomes.values()), outcomes
    missing = [name for name in PROOF_MUST_RUN if not any(ran.endswith(name) for ran in outcomes)]
    assert not missing, f"the platform scope no longer runs {missing}; ran {sorted(outcomes)}"
    # A proof, not a whole half: it leaves out tests of the CPU half (the GPU half is never part of it).
    assert not any(".test_gpu." in f".{name}" for name in outcomes)


@pytest.mark.allow_log(r"ERROR at setup of test_cuda_is_available")  # the failure this test asks for
@pytest.mark.parametrize("profile", by_shard(PROFILES))
def test_require_gpu_turns_gpu_skips_into_failures(profiles: Profiles, profile: str) -> None:
    result = docker.run(["run", "--rm", "--env", "PUDEV_REQUIRE_GPU=1", profiles.image(profile).tag, "pudev",
                         "selftest", "--", "-k", "test_cuda_is_available", "-p", "no:randomly"], check=False,
                        timeout=600)
    assert result.returncode == 1
    assert "PUDEV_REQUIRE_GPU=1 but no GPU visible" in result.stdout


def _probe_build(root: Path) -> str:
    """Build the newest profile from a build-context copy under its own name; the log."""
    try:
        return run_pudev("build", "--profile", newest_profile(), "--set", f"image={CACHE_PROBE_IMAGE}",
                         env={"PUDEV_ROOT": str(root)}, timeout=1800, check=True).stdout
    finally:
        docker.run(["rmi", f"{CACHE_PROBE_IMAGE}:{profile_variant(newest_profile()).name}"], check=False)


def _package_steps(log: str) -> dict[str, bool]:
    """Each of the two package steps, by the part of the lock it installs: whether it came from the cache."""
    steps = re.findall(r'^#(\d+) \[final\s+\d+/\d+\] RUN .*install-packages\.sh "[^"]*" ([\w-]+)$',
                       log, re.MULTILINE)
    return {part: f"#{step} CACHED" in log for step, part in steps}


def test_another_lock_leaves_this_build_cached(newest_image: LocalImage, tmp_path: Path) -> None:
    # A build-context copy in which another lock is broken, built under its own name: this
    # profile's package steps must come from the cache (they would fail or rerun if they saw that lock).
    root = build_context_copy(tmp_path)
    _probe_build(root)  # the cache as this context leaves it, whatever the run dropped before (a prune, a restart)
    own = lock_in(root, newest_profile())
    other = next(path for path in sorted(own.parent.glob("*.txt")) if path not in (own, own.parent / "build-tools.txt"))
    other.write_text(re.sub(r"^tqdm==\S+", "tqdm==99.0.0", other.read_text(), flags=re.MULTILINE))
    log = _probe_build(root)
    assert _package_steps(log) == dict.fromkeys(PARTS, True), log[-3000:]


def test_a_pin_of_the_rest_leaves_the_rarely_changing_step_cached(newest_image: LocalImage, tmp_path: Path) -> None:
    """The profile's own lock edited in a package of the rest (one package's hash lines shuffled: a real change
    of the lock's lines that needs no download): the rest's step runs again, the rarely changing one's comes
    from the cache, since each step mounts its own part of the lock alone."""
    root = build_context_copy(tmp_path)
    _probe_build(root)  # the cache as this context leaves it, whatever the run dropped before (a prune, a restart)
    own = lock_in(root, newest_profile())
    rarely = names_in(rarely_changing_path().read_text())
    # The rest's pin with the most hashes, in an order no earlier run built: a fixed edit (say, the
    # hashes reversed) is built by the first run and then comes from the cache a CI machine keeps.
    light = max((pin for pin in read_pins(own.read_text()) if pin.name not in rarely),
                key=lambda pin: pin.text.count("--hash"))
    lines = light.text.split("\n")
    comments = [line for line in lines if line.lstrip().startswith("#")]  # "# via ...", after the hashes
    first, *hashes = [line.rstrip(" \\") for line in lines if not line.lstrip().startswith("#")]
    assert len(hashes) >= 8, light.text  # 8! orders at the least: a repeat by chance is out of reach
    shuffled = hashes[:]
    while shuffled == hashes:
        random.SystemRandom().shuffle(shuffled)  # unique only, so not the run's seed: a replay must not repeat it
    edited = "\n".join([" \\\n".join([first, *shuffled]), *comments])
    own.write_text(own.read_text().replace(light.text, edited, 1))
    log = _probe_build(root)
    assert _package_steps(log) == {"rarely-changing": True, "the-rest": False}, log[-3000:]


def _kept_manifest(profile: str) -> Path:
    return kept_between_runs.cache_dir() / "manifests" / f"{profile}.json"


def _kept_is_current(profile: str) -> bool:
    """A kept manifest of the profile's variant as the files define it now (a release-day move makes it stale)."""
    try:
        manifest = json.loads(_kept_manifest(profile).read_text())
    except (OSError, ValueError):
        return False
    variant = profile_variant(profile)
    return (manifest.get("variant"), str(manifest.get("torch", "")).split("+")[0],
            [toolkit.get("version") for toolkit in manifest.get("toolkits") or []]) == (
        variant.name, variant.torch, list(variant.toolkit_versions))


@pytest.mark.parametrize("profile", by_shard(NATIVE_BUILDS))
def test_the_manifest_names_what_the_image_holds(profiles: Profiles, profile: str, tmp_path: Path) -> None:
    """`pudev manifest` of the build: its variant, torch, toolkits and image id. It is kept between runs for the
    diff below, so that another line's shard needs no second line's image (nor its room)."""
    image, variant = profiles.image(profile), profile_variant(profile)
    run_pudev("manifest", "--profile", profile, "--out", str(tmp_path), check=True)
    written = tmp_path / f"{variant.name}.json"
    manifest = json.loads(written.read_text())
    assert (manifest["variant"], manifest["image_id"], manifest["cuda"]) == (variant.name, image.image_id, variant.cuda)
    assert manifest["torch"].split("+")[0] == variant.torch
    assert [toolkit["version"] for toolkit in manifest["toolkits"]] == list(variant.toolkit_versions)
    kept = _kept_manifest(profile)
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(written, kept)


@pytest.mark.shard(LINE_2024)
def test_manifests_of_the_two_lines_differ_where_they_should(profiles: Profiles) -> None:
    """`pudev manifest --diff`: packages up- and downgraded, added, removed, and the base's digest. The newest
    line's manifest is the one its shard kept (test above), or, where none ran here yet, made now."""
    (older, *_), newer = builds_of(LINE_2024), newest_profile()
    for profile in (older, newer):
        if profile == older or not _kept_is_current(profile):
            test_the_manifest_names_what_the_image_holds(profiles, profile, Path(tempfile.mkdtemp()))
    diff = run_pudev("manifest", "--diff", str(_kept_manifest(older)), str(_kept_manifest(newer)), check=True).stdout
    old, new = profile_variant(older), profile_variant(newer)
    assert f"~ torch {old.torch} -> {new.torch}" in diff, diff
    assert f"~ base {old.base_image}@" in diff and f"-> {new.base_image}@" in diff
    for gone in set(old.toolkit_versions) - set(new.toolkit_versions):
        assert f"- toolkit {gone} " in diff
    for added in set(new.toolkit_versions) - set(old.toolkit_versions):
        assert f"+ toolkit {added} " in diff
    assert "pip packages:" in diff
