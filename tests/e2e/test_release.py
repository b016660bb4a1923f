"""Publishing exactly the image that passed, against a registry that behaves like
GHCR and Docker Hub (realistic_registry.py: TLS under a test CA, Bearer tokens per
scope from a token server, blob GETs redirected to a storage host that refuses
Authorization, 429 with Retry-After from a proxy, credentials from a
docker-credential helper named in DOCKER_CONFIG): push a candidate once by digest,
test that digest, promote it (cross-repository mount, no layer sent again), an SBOM
pushed and fetched back by digest, and the refusals: untested, failed, a GPU half
never run, a candidate changed after testing, a pull-only login; the registry
stopped mid-promote, then the rerun completing; pull back by tag and digest;
`pudev pin` through the registry API. Each step's wall time goes to
publish-timings.json in the report directory."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from e2e_support import LocalImage, Profiles, SuiteRun, profile_variant, push_candidate, registry_client, run_pudev
from realistic_registry import RealisticRegistry
from shards import LINE_2024, builds_of

from pudev.engine import docker
from pudev.registry.client import RegistryClient
from pudev.release.targets import parse_digest_ref
from pudev.release.test import results
from pudev.reports.sbom import component_versions

# On a line built for one platform: the newest line's variant is built for two, so its promote needs both
# platforms' candidates, which the arm64 shard makes (test_one_tag_every_platform.py promotes them together).
# Here, every refusal, fault and pull back is proven on the 2024 line's single-platform build, in its shard.
(RELEASE_PROFILE, *_) = builds_of(LINE_2024)
pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.shard(LINE_2024)]
FAST_FAILURE = {"PUDEV_PUBLISH_ATTEMPTS": "2", "PUDEV_REGISTRY_RETRIES": "1"}
BROKEN_IMAGE = "pudev-broken/pytorch-universal-dev"


TIMINGS: dict[str, float] = {}


def _timed(step: str, started: float) -> None:
    TIMINGS[step] = round(time.monotonic() - started, 1)


@pytest.fixture(scope="module")
def release_image(profiles: Profiles) -> LocalImage:
    return profiles.image(RELEASE_PROFILE)


@pytest.fixture(scope="module")
def release_suite(profiles: Profiles) -> SuiteRun:
    return profiles.suite(RELEASE_PROFILE)


@pytest.fixture(scope="module")
def registry(run_registry: RealisticRegistry, docker_engine: str,
             report_dir: Path) -> Iterator[RealisticRegistry]:
    with registry_client(run_registry):
        yield run_registry
    docker.run(["rmi", f"{BROKEN_IMAGE}:{profile_variant(RELEASE_PROFILE).name}"], check=False)
    (report_dir / "publish-timings.json").write_text(json.dumps(TIMINGS, indent=2) + "\n")
    print(f"publish timings (s): {TIMINGS}")


@pytest.fixture(scope="module")
def pushed(release_image: LocalImage, release_suite: SuiteRun, registry: RealisticRegistry) -> tuple[str, str]:
    """The local build pushed as a candidate: its reference by digest, and its candidate tag."""
    assert release_suite.returncode == 0, "release tests need the image suite to have passed"
    started = time.monotonic()
    try:
        return push_candidate(registry, profile=RELEASE_PROFILE)
    finally:
        _timed("push (7 GB candidate, daemon; unchanged layers kept from earlier runs)", started)


@pytest.fixture(scope="module")
def candidate(pushed: tuple[str, str]) -> str:
    return pushed[0]


def _test_by_digest(candidate: str) -> subprocess.CompletedProcess[str]:
    """`pudev test CANDIDATE --cpu-only --reuse-local-pass`: the candidate is the local build pushed, so its
    image id already passed the CPU half in this run (`release_suite`, which `pushed` needs), and that pass is
    recorded against the digest instead of a second 200 s run of the same image. The suite's content is proven
    by test_local_build.py::test_image_suite_passes_and_only_gpu_checks_skip; a real run by digest, its
    outcome recorded, by test_a_failed_candidate_is_refused."""
    return run_pudev("test", candidate, "--cpu-only", "--reuse-local-pass", timeout=3600)


@pytest.fixture
def tested(candidate: str, registry: RealisticRegistry) -> str:
    """The candidate with a recorded CPU pass: the promotion test's own run, or one made here when a
    test runs alone (`pytest tests/e2e/test_release.py::test_...`)."""
    ref = parse_digest_ref(candidate, flag="tested")
    if not any(result.half == "cpu" and result.passed for result in results(RegistryClient(registry.address), ref)):
        result = _test_by_digest(candidate)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return candidate


@pytest.fixture
def promoted(tested: str, registry: RealisticRegistry) -> str:
    """The released reference by digest: the promotion test's, or promoted here when run alone."""
    digest = tested.split("@")[1]
    client = RegistryClient(registry.address)
    if client.digest(_release(registry), profile_variant(RELEASE_PROFILE).name) != digest:
        code, output = _promote(tested)
        assert code == 0, output
    return tested.replace("-candidates@", "@")


def _promote(ref: str, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = run_pudev("promote", ref, *extra, env={**FAST_FAILURE, **(env or {})}, timeout=1800)
    return result.returncode, result.stdout + result.stderr


def _release(registry: RealisticRegistry) -> str:
    return profile_variant(RELEASE_PROFILE).image.rsplit("/", 1)[-1]


def test_push_sends_a_build_once(candidate: str, registry: RealisticRegistry, tmp_path: Path) -> None:
    blobs = registry.blob_count()
    again, _ = push_candidate(registry, "--ref-file", str(tmp_path / "ref"), profile=RELEASE_PROFILE)
    assert again == candidate and (tmp_path / "ref").read_text().strip() == candidate
    assert registry.blob_count() == blobs
    assert candidate.startswith(f"{registry.address}/{_release(registry)}-candidates@sha256:")


def test_bad_input(candidate: str) -> None:
    code, output = _promote("not-a-reference")
    assert code != 0 and "not a reference by digest" in output and "Traceback" not in output
    result = run_pudev("test", "127.0.0.1:9/x-candidates@sha256:" + "0" * 64, env=FAST_FAILURE)
    assert result.returncode != 0 and "does not answer" in result.stderr and "Traceback" not in result.stderr
    result = run_pudev("push", "--profile", RELEASE_PROFILE, "--registry", "Bad Host//x")
    assert result.returncode != 0 and "--registry Bad Host//x: not a registry" in result.stderr
    result = run_pudev("push", "--profile", RELEASE_PROFILE, "--set", "image=pudev-never-built/x", "--registry",
                       "127.0.0.1:5000")
    assert result.returncode != 0 and "build it first" in result.stderr


def test_an_untested_candidate_is_refused(candidate: str, registry: RealisticRegistry) -> None:
    # The candidate's own label names the halves it must pass: the stand-in build's requires the CPU half.
    code, output = _promote(candidate)
    assert code != 0 and "has no cpu test result, so it was never tested that way" in output
    assert RegistryClient(registry.address).digest(_release(registry), profile_variant(RELEASE_PROFILE).name) is None


def test_a_failed_candidate_is_refused(release_image: LocalImage, registry: RealisticRegistry) -> None:
    """A real failing run (the suite of a deliberately broken image), recorded against its digest."""
    broken = f"{BROKEN_IMAGE}:{profile_variant(RELEASE_PROFILE).name}"
    dockerfile = (f"FROM {release_image.tag}\nUSER 0\n"
                  "RUN printf 'raise RuntimeError(\"broken on purpose\")\\n' >> /opt/pudev/tests/conftest.py\n"
                  "USER 1000\n")
    subprocess.run([docker.docker_cli(), "build", "--quiet", "-t", broken, "-"], input=dockerfile, text=True,
                   capture_output=True, check=True, env=docker.docker_env())
    ref, _ = push_candidate(registry, "--set", f"image={BROKEN_IMAGE}", profile=RELEASE_PROFILE)
    # --reuse-local-pass as the other release tests pass it: another image id, so the suite really runs here.
    tested = run_pudev("test", ref, "--cpu-only", "--reuse-local-pass", timeout=1800)
    assert tested.returncode != 0 and "already passed here" not in tested.stdout
    assert f"recorded cpu FAILURE for {ref}" in tested.stdout
    code, output = _promote(ref)
    assert code != 0 and "failed its cpu test" in output and "a failed digest is never promoted" in output
    docker.run(["rmi", broken], check=False)  # it is built on the local image, which later tests remove


def test_the_tested_candidate_is_promoted_without_sending_a_layer(candidate: str, registry: RealisticRegistry) -> None:
    started = time.monotonic()
    tested = _test_by_digest(candidate)
    _timed("test by digest (the local pass of this image id, recorded)", started)
    assert tested.returncode == 0, tested.stdout[-3000:] + tested.stderr[-2000:]
    assert "already passed here (cpu at " in tested.stdout  # the same image id as the local build's
    assert f"recorded cpu pass for {candidate}" in tested.stdout
    # What it must have passed is its own label's (the stand-in build requires the CPU half), whatever
    # the checkout's variant file declares now: tests/unit/test_release_reads_the_image.py holds that rule.
    through = candidate.replace(registry.address, registry.proxy_address)
    # A login that may only pull is refused at the first write, naming the repository and the scope.
    registry.use_credentials("reader")
    try:
        code, output = _promote(through)
    finally:
        registry.use_credentials("pusher")
    assert code != 0 and f"refused pull,push on repository {_release(registry)}" in output, output
    assert "docker-credential-pudevtest" in output and registry.password("reader") not in output
    blobs = registry.blob_count()
    registry.proxy.requests.clear()
    throttle = registry.throttle(3, retry_after=1)  # rate-limited as Docker Hub and GHCR do; honoured, then done
    started = time.monotonic()
    code, output = _promote(through, env={"PUDEV_REGISTRY_RETRIES": "4"})
    _timed("promote (mounts + tags, through the throttling proxy)", started)
    assert code == 0, output
    assert len(throttle.answered) == 3
    assert not registry.proxy.uploads(), registry.proxy.uploads()  # mounts only
    assert registry.blob_count() == blobs
    tags = run_pudev("tags", "--profile", RELEASE_PROFILE, check=True).stdout.split()
    digest = candidate.split("@")[1]
    client = RegistryClient(registry.address)
    assert all(client.digest(_release(registry), tag) == digest for tag in tags), tags
    assert f"promoted {registry.address}/{_release(registry)}@{digest}: {', '.join(tags)}" in output.replace(
        registry.proxy_address, registry.address)


def test_sbom_pushed_and_fetched_back_by_digest(promoted: str, registry: RealisticRegistry, tmp_path: Path) -> None:
    release = promoted
    written, fetched = tmp_path / "sbom.json", tmp_path / "fetched.json"
    started = time.monotonic()
    run_pudev("sbom", release, "--push", "--out", str(written), check=True, timeout=1800)
    _timed("sbom push (inventory read in the image + attach)", started)
    seen = len(registry.storage_host.requests)
    started = time.monotonic()
    run_pudev("sbom", release, "--fetch", "--out", str(fetched), check=True)
    _timed("sbom fetch", started)
    assert fetched.read_text() == written.read_text()
    # The payload came from the storage host the registry redirected to, and the token stayed behind.
    assert any(request.method == "GET" for request in registry.storage_host.requests[seen:])
    assert not registry.storage_host.with_authorization()
    text = fetched.read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    data = json.loads(text)
    variant = profile_variant(RELEASE_PROFILE)
    assert data["bomFormat"] == "CycloneDX" and data["metadata"]["component"]["version"] == release.split("@")[1]
    versions = component_versions(text)
    torch = next(c for c in data["components"] if c["name"] == "torch")
    assert {p["name"]: p["value"] for p in torch["properties"]}["pudev:torch:cuda"] == variant.cuda
    toolkits = [c for c in data["components"] if c["name"] == "cuda-toolkit"]
    assert sorted(c["version"].rsplit(".", 1)[0] for c in toolkits) == sorted(variant.toolkit_versions)
    assert "deb:zsh" in versions and "pypi:jupyterlab" in versions


def test_a_candidate_changed_after_testing_is_refused(pushed: tuple[str, str], tested: str,
                                                     registry: RealisticRegistry) -> None:
    # `tested`, not just `pushed`: run alone, an untested candidate is refused for that instead.
    candidate, tag = tested, pushed[1]
    client = RegistryClient(registry.address)
    repository, digest = candidate.split("/", 1)[1].split("@")
    original, media_type = client.manifest(repository, digest)
    changed = json.loads(original)
    changed["annotations"] = {"org.example.changed": "after testing"}  # same layers, another manifest
    client.put_manifest(repository, tag, json.dumps(changed).encode(), media_type)
    try:
        assert client.digest(repository, tag) != digest
        code, output = _promote(candidate)
        assert code != 0 and "the candidate changed after testing; refusing it" in output
    finally:
        client.put_manifest(repository, tag, original, media_type)
    assert client.digest(repository, tag) == digest


def test_registry_stopped_mid_promote_then_completed(tested: str, registry: RealisticRegistry) -> None:
    candidate = tested
    client = RegistryClient(registry.address)
    release, digest = _release(registry), candidate.split("@")[1]
    deleted = client.request("DELETE", f"/v2/{release}/manifests/{digest}", scope=f"repository:{release}:delete")
    assert deleted.status_code == 202  # start from no tag
    tags = run_pudev("tags", "--profile", RELEASE_PROFILE, check=True).stdout.split()
    proxy, through = registry.proxy, candidate.replace(registry.address, registry.proxy_address)

    def stop_after_two_tags(method: str, path: str, status: int) -> None:
        landed = [p for m, p, s in proxy.requests if m == "PUT" and f"/{release}/manifests/" in p and s == 201]
        if len(landed) == 2:
            registry.stop_registry()

    proxy.requests.clear()
    proxy.after = stop_after_two_tags
    try:
        code, output = _promote(through)
    finally:
        proxy.after = lambda method, path, status: None
        registry.start_registry()
    assert code != 0 and "Traceback" not in output, output
    assert "remote state of each tag:" in output
    assert len(re.findall(r": landed \(as this run saw it; the registry does not answer now\)", output)) == 2
    assert len(re.findall(r": not landed \(as this run saw it", output)) == len(tags) - 2
    proxy.requests.clear()
    code, output = _promote(through)
    assert code == 0, output
    assert output.count("already at") == 2 and output.count("pudev: tagged") == len(tags) - 2
    assert not proxy.uploads()  # the rerun sent no layer either
    assert all(client.digest(release, tag) == digest for tag in tags)


def test_pull_back_by_tag_and_digest_and_smoke_test(release_image: LocalImage, promoted: str,
                                                    registry: RealisticRegistry) -> None:
    release = promoted
    repository = release.split("@")[0]
    tag = profile_variant(RELEASE_PROFILE).name
    docker.run(["rmi", "--force", release_image.image_id], check=False)  # every name and digest reference
    assert docker.inspect_image(release_image.image_id) is None
    try:
        started = time.monotonic()
        docker.run(["pull", f"{repository}:{tag}"], timeout=3600)
        _timed("pull by tag (7 GB, daemon, blobs from the storage host)", started)
        docker.run(["pull", release], timeout=3600)
        # Whatever blob the daemon fetched came from the storage host, never with the registry's token. The
        # containerd image store keeps content by digest after `rmi` (until its garbage collection), so it may
        # fetch none here: pudev's client proves the redirected fetch (test_realistic_registry,
        # test_registry_client); the daemon's is no longer proven on this store.
        assert not registry.storage_host.with_authorization()
        assert docker.image_id(release) == release_image.image_id  # the same image, byte for byte
        smoke = docker.run(["run", "--rm", release, "pudev", "selftest", "--", "-q", "-m", "smoke"], check=False,
                           timeout=1800)
        assert smoke.returncode == 0, smoke.stdout[-4000:]
        assert " passed" in smoke.stdout
    finally:
        docker.run(["tag", release, release_image.tag], check=False)  # later tests and runs use the local name


def test_pin_resolves_digests_through_the_registry_api(registry: RealisticRegistry, tmp_path: Path) -> None:
    """Point a copy of the variant file at images in the local registry; pin writes their digests."""
    from pudev.config.loader import load_matrix
    from pudev.paths import VARIANTS_FILE

    # Two small images with different digests (the second only adds a label): quick to push.
    labelled = subprocess.run([docker.docker_cli(), "build", "--quiet", "-t", "pudev-pin-probe:latest", "-"],
                              input="FROM pudev-standin/os:bookworm\nLABEL org.pudev.pin-probe=1\n", text=True,
                              capture_output=True, check=True, env=docker.docker_env())
    assert labelled.stdout.strip()
    base, toolkit = f"{registry.address}/mirror/os:bookworm", f"{registry.address}/mirror/cuda:devel"
    pushed = {}
    for local, remote in (("pudev-standin/os:bookworm", base), ("pudev-pin-probe:latest", toolkit)):
        docker.run(["tag", local, remote])
        output = docker.run(["push", remote], timeout=1800).stdout
        pushed[remote] = output.split("digest: ")[1].split()[0]
        docker.run(["rmi", remote], check=False)
    declared = load_matrix(VARIANTS_FILE)
    text = VARIANTS_FILE.read_text()
    for variant in declared.variants.values():  # every base, then every toolkit, whatever the matrix holds
        text = text.replace(f'"{variant.base_image}"', f'"{base}"')
    for variant in declared.variants.values():
        for slot in variant.toolkits:
            text = text.replace(f'"{slot.image}"', f'"{toolkit}"')
    variants = tmp_path / "variants.toml"
    variants.write_text(text)
    result = run_pudev("pin", "--variants-file", str(variants), check=True)
    assert "pinned 2 image(s)" in result.stdout
    for variant in load_matrix(variants).variants.values():
        assert variant.base_image == f"{base}@{pushed[base]}"
        assert all(slot.image == f"{toolkit}@{pushed[toolkit]}" for slot in variant.toolkits)
    docker.run(["rmi", "pudev-pin-probe:latest"], check=False)
    assert "# The build matrix" in variants.read_text()  # comments and layout survive
    again = run_pudev("pin", "--variants-file", str(variants), check=True)
    assert "pinned 0 image(s)" in again.stdout  # already pinned to the current digests
