"""Publishing exactly the image that passed, against a real local registry: push a
candidate once by digest, test that digest, promote it (cross-repository mount,
no layer sent again), an SBOM pushed and fetched back by digest, and the
refusals: untested, failed, a GPU half never run, a candidate changed after
testing; the registry stopped mid-promote, then the rerun completing; pull back
by tag and digest; `pudev pin` through the registry API."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from e2e_support import LocalImage, SuiteRun, profile_variant, run_pudev
from fault_proxy import RegistryProxy
from local_registry import LocalRegistry

from pudev.engine import docker
from pudev.release.registry import RegistryClient
from pudev.release.sbom import component_versions

pytestmark = [pytest.mark.engine, pytest.mark.slow]
FAST_FAILURE = {"PUDEV_PUBLISH_ATTEMPTS": "2", "PUDEV_REGISTRY_RETRIES": "1"}
BROKEN_IMAGE = "pudev-broken/pytorch-universal-dev"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory, docker_engine: str) -> Iterator[LocalRegistry]:
    server = LocalRegistry(tmp_path_factory.mktemp("registry"))
    server.start()
    yield server
    server.stop()
    # Names under this throwaway registry would keep old images alive on the next run's engine.
    listed = docker.run(["images", "--digests", "--format", "{{.Repository}} {{.Tag}} {{.Digest}}"]).stdout
    names = []
    for repository, tag, digest in (line.split() for line in listed.splitlines()):
        if repository.startswith(server.address + "/"):
            names.append(f"{repository}:{tag}" if tag != "<none>" else f"{repository}@{digest}")
    if names:
        docker.run(["rmi", *names], check=False)
    docker.run(["rmi", f"{BROKEN_IMAGE}:{profile_variant('local').name}"], check=False)


def _push(registry: LocalRegistry, *extra: str) -> tuple[str, str]:
    out = run_pudev("push", "--profile", "local", "--registry", registry.address, *extra, check=True).stdout
    line = next(text for text in out.splitlines() if text.startswith("candidate "))
    ref, tag = line.split()[1], line.split()[3].rstrip(")")
    return ref, tag


@pytest.fixture(scope="module")
def pushed(local_image: LocalImage, image_suite: SuiteRun, registry: LocalRegistry) -> tuple[str, str]:
    """The local build pushed as a candidate: its reference by digest, and its candidate tag."""
    assert image_suite.returncode == 0, "release tests need the image suite to have passed"
    return _push(registry)


@pytest.fixture(scope="module")
def candidate(pushed: tuple[str, str]) -> str:
    return pushed[0]


def _promote(ref: str, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = run_pudev("promote", ref, *extra, env={**FAST_FAILURE, **(env or {})}, timeout=1800)
    return result.returncode, result.stdout + result.stderr


def _release(registry: LocalRegistry) -> str:
    return profile_variant("local").image.rsplit("/", 1)[-1]


def test_push_sends_a_build_once(candidate: str, registry: LocalRegistry, tmp_path: Path) -> None:
    blobs = registry.blob_count()
    again, _ = _push(registry, "--ref-file", str(tmp_path / "ref"))
    assert again == candidate and (tmp_path / "ref").read_text().strip() == candidate
    assert registry.blob_count() == blobs
    assert candidate.startswith(f"{registry.address}/{_release(registry)}-candidates@sha256:")


def test_bad_input(candidate: str) -> None:
    code, output = _promote("not-a-reference")
    assert code != 0 and "not a reference by digest" in output and "Traceback" not in output
    result = run_pudev("test", "127.0.0.1:9/x-candidates@sha256:" + "0" * 64, env=FAST_FAILURE)
    assert result.returncode != 0 and "does not answer" in result.stderr and "Traceback" not in result.stderr
    result = run_pudev("push", "--profile", "local", "--registry", "Bad Host//x")
    assert result.returncode != 0 and "--registry Bad Host//x: not a registry" in result.stderr
    result = run_pudev("push", "--profile", "local", "--set", "image=pudev-never-built/x", "--registry",
                       "127.0.0.1:5000")
    assert result.returncode != 0 and "build it first" in result.stderr


def test_an_untested_candidate_is_refused(candidate: str, registry: LocalRegistry) -> None:
    code, output = _promote(candidate)
    assert code != 0 and "has no test result at all" in output
    code, output = _promote(candidate, "--profile", "local")
    assert code != 0 and "has no cpu test result, so it was never tested that way" in output
    assert RegistryClient(registry.address).digest(_release(registry), profile_variant("local").name) is None


def test_a_failed_candidate_is_refused(local_image: LocalImage, registry: LocalRegistry) -> None:
    """A real failing run (the suite of a deliberately broken image), recorded against its digest."""
    broken = f"{BROKEN_IMAGE}:{profile_variant('local').name}"
    dockerfile = (f"FROM {local_image.tag}\nUSER 0\n"
                  "RUN printf 'raise RuntimeError(\"broken on purpose\")\\n' >> /opt/pudev/tests/conftest.py\n"
                  "USER 1000\n")
    subprocess.run([docker.docker_cli(), "build", "--quiet", "-t", broken, "-"], input=dockerfile, text=True,
                   capture_output=True, check=True, env=docker.docker_env())
    ref, _ = _push(registry, "--set", f"image={BROKEN_IMAGE}")
    tested = run_pudev("test", ref, "--cpu-only", timeout=1800)
    assert tested.returncode != 0
    assert f"recorded cpu FAILURE for {ref}" in tested.stdout
    code, output = _promote(ref, "--profile", "local")
    assert code != 0 and "failed its cpu test" in output and "a failed digest is never promoted" in output
    docker.run(["rmi", broken], check=False)  # it is built on the local image, which later tests remove


def test_the_tested_candidate_is_promoted_without_sending_a_layer(candidate: str, registry: LocalRegistry) -> None:
    tested = run_pudev("test", candidate, "--cpu-only", timeout=3600)
    assert tested.returncode == 0, tested.stdout[-3000:] + tested.stderr[-2000:]
    assert f"recorded cpu pass for {candidate}" in tested.stdout
    # The declared variant also needs its GPU half, which no machine here can run.
    code, output = _promote(candidate)
    assert code != 0 and "has no gpu test result, so it was never tested that way" in output
    blobs = registry.blob_count()
    with RegistryProxy(registry.address) as proxy:
        code, output = _promote(candidate.replace(registry.address, proxy.address), "--profile", "local")
        assert code == 0, output
        assert not proxy.uploads(), proxy.uploads()  # mounts only
    assert registry.blob_count() == blobs
    tags = run_pudev("tags", "--profile", "local", check=True).stdout.split()
    digest = candidate.split("@")[1]
    client = RegistryClient(registry.address)
    assert all(client.digest(_release(registry), tag) == digest for tag in tags), tags
    assert f"promoted {registry.address}/{_release(registry)}@{digest}: {', '.join(tags)}" in output.replace(
        proxy.address, registry.address)


def test_sbom_pushed_and_fetched_back_by_digest(candidate: str, registry: LocalRegistry, tmp_path: Path) -> None:
    release = candidate.replace("-candidates@", "@")
    written, fetched = tmp_path / "sbom.json", tmp_path / "fetched.json"
    run_pudev("sbom", release, "--push", "--out", str(written), check=True, timeout=1800)
    run_pudev("sbom", release, "--fetch", "--out", str(fetched), check=True)
    assert fetched.read_text() == written.read_text()
    text = fetched.read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    data = json.loads(text)
    variant = profile_variant("local")
    assert data["bomFormat"] == "CycloneDX" and data["metadata"]["component"]["version"] == release.split("@")[1]
    versions = component_versions(text)
    torch = next(c for c in data["components"] if c["name"] == "torch")
    assert {p["name"]: p["value"] for p in torch["properties"]}["pudev:torch:cuda"] == variant.cuda
    toolkits = [c for c in data["components"] if c["name"] == "cuda-toolkit"]
    assert sorted(c["version"].rsplit(".", 1)[0] for c in toolkits) == sorted(variant.toolkit_versions)
    assert "deb:zsh" in versions and "pypi:jupyterlab" in versions


def test_a_candidate_changed_after_testing_is_refused(pushed: tuple[str, str], registry: LocalRegistry) -> None:
    candidate, tag = pushed
    client = RegistryClient(registry.address)
    repository, digest = candidate.split("/", 1)[1].split("@")
    original, media_type = client.manifest(repository, digest)
    changed = json.loads(original)
    changed["annotations"] = {"org.example.changed": "after testing"}  # same layers, another manifest
    client.put_manifest(repository, tag, json.dumps(changed).encode(), media_type)
    try:
        assert client.digest(repository, tag) != digest
        code, output = _promote(candidate, "--profile", "local")
        assert code != 0 and "the candidate changed after testing; refusing it" in output
    finally:
        client.put_manifest(repository, tag, original, media_type)
    assert client.digest(repository, tag) == digest


def test_registry_stopped_mid_promote_then_completed(candidate: str, registry: LocalRegistry) -> None:
    client = RegistryClient(registry.address)
    release, digest = _release(registry), candidate.split("@")[1]
    assert client.request("DELETE", f"/v2/{release}/manifests/{digest}").status == 202  # start from no tag
    tags = run_pudev("tags", "--profile", "local", check=True).stdout.split()
    with RegistryProxy(registry.address) as proxy:
        through = candidate.replace(registry.address, proxy.address)

        def stop_after_two_tags(method: str, path: str, status: int) -> None:
            landed = [p for m, p, s in proxy.requests if m == "PUT" and f"/{release}/manifests/" in p and s == 201]
            if len(landed) == 2:
                registry.stop()

        proxy.after = stop_after_two_tags
        try:
            code, output = _promote(through, "--profile", "local")
        finally:
            proxy.after = lambda method, path, status: None
            registry.start()
        assert code != 0 and "Traceback" not in output, output
        assert "remote state of each tag:" in output
        assert len(re.findall(r": landed \(as this run saw it; the registry does not answer now\)", output)) == 2
        assert len(re.findall(r": not landed \(as this run saw it", output)) == len(tags) - 2
        proxy.requests.clear()
        code, output = _promote(through, "--profile", "local")
        assert code == 0, output
        assert output.count("already at") == 2 and output.count("pudev: tagged") == len(tags) - 2
        assert not proxy.uploads()  # the rerun sent no layer either
    assert all(client.digest(release, tag) == digest for tag in tags)


def test_pull_back_by_tag_and_digest_and_smoke_test(local_image: LocalImage, candidate: str,
                                                    registry: LocalRegistry) -> None:
    release = candidate.replace("-candidates@", "@")
    repository = release.split("@")[0]
    tag = profile_variant("local").name
    docker.run(["rmi", "--force", local_image.image_id], check=False)  # every name and digest reference
    assert docker.inspect_image(local_image.image_id) is None
    try:
        docker.run(["pull", f"{repository}:{tag}"], timeout=3600)
        docker.run(["pull", release], timeout=3600)
        assert docker.image_id(release) == local_image.image_id  # the same image, byte for byte
        smoke = docker.run(["run", "--rm", release, "pudev", "selftest", "--", "-q", "-m", "smoke"], check=False,
                           timeout=1800)
        assert smoke.returncode == 0, smoke.stdout[-4000:]
        assert " passed" in smoke.stdout
    finally:
        docker.run(["tag", release, local_image.tag], check=False)  # later tests and runs use the local name


def test_pin_resolves_digests_through_the_registry_api(registry: LocalRegistry, tmp_path: Path) -> None:
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
