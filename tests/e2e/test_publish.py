"""Publishing to a real local registry: refusal without a test pass, bad input,
the registry stopped mid-publish (report, then completion on rerun without
duplicated work), and the round trip: delete locally, pull by tag and by digest,
run the smoke part of the image suite on what came back."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import PUDEV, LocalImage, SuiteRun, run_pudev
from jupyter_client_lite import free_port
from local_registry import LocalRegistry

from pudev import engine
from pudev.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.slow]
FAST_FAILURE = {"PUDEV_PUBLISH_ATTEMPTS": "2", "PUDEV_REGISTRY_RETRIES": "1"}


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory, docker_engine: str) -> Iterator[LocalRegistry]:
    server = LocalRegistry(tmp_path_factory.mktemp("registry"))
    server.start()
    yield server
    server.stop()
    # Names under this throwaway registry would keep old images alive on the next run's engine.
    listed = engine.run(["images", "--digests", "--format", "{{.Repository}} {{.Tag}} {{.Digest}}"]).stdout
    names = []
    for repository, tag, digest in (line.split() for line in listed.splitlines()):
        if repository.startswith(server.address + "/"):
            names.append(f"{repository}:{tag}" if tag != "<none>" else f"{repository}@{digest}")
    if names:
        engine.run(["rmi", *names], check=False)


@pytest.fixture(scope="module")
def tested(local_image: LocalImage, image_suite: SuiteRun) -> LocalImage:
    assert image_suite.returncode == 0, "publish tests need the image suite to have passed"
    return local_image


def _publish(registry: str, *, env: dict[str, str] | None = None, timeout: float = 3600) -> tuple[int, str]:
    result = run_pudev("publish", "--profile", "local", "--registry", registry, env=env, timeout=timeout)
    return result.returncode, result.stdout + result.stderr


def test_tags_are_read_from_inside_the_image(tested: LocalImage) -> None:
    result = run_pudev("tags", "--profile", "local", check=True)
    tags = result.stdout.split()
    assert tags[:2] == ["2.4.1-cu121-py3.11", "cu121"]
    assert tags[2].startswith("cu121-2") and len(tags[2]) == len("cu121-YYYYMMDD")
    assert tags[-1] == "latest"


def test_labels_on_the_image(tested: LocalImage) -> None:
    labels = (engine.inspect_image(tested.tag) or {})["Config"]["Labels"]
    for key in ("source", "revision", "created", "version", "title", "description", "licenses", "base.name"):
        if key == "source" and not labels.get("org.opencontainers.image.source"):
            continue  # a checkout without an origin remote has no source URL to state
        assert labels.get(f"org.opencontainers.image.{key}"), key
    assert labels["org.pudev.variant"] == "cu121" and labels["org.pudev.torch"] == "2.4.1"
    assert labels["org.pudev.base.id"].startswith("sha256:")


def test_manifest_is_read_from_the_image(tested: LocalImage, tmp_path: Path) -> None:
    run_pudev("manifest", "--profile", "local", "--out", str(tmp_path), check=True)
    text = (tmp_path / "cu121.md").read_text()
    for expected in ("image id", "torch 2.4.1", "CUDA 12.1", "cuDNN", "release 11.8", "release 12.4",
                     "## Python packages (pip list)", "## Debian packages (dpkg -l)", "jupyterlab", "| zsh |"):
        assert expected in text, expected
    assert (tmp_path / "cu121.json").stat().st_size > 1000


def test_refuses_an_image_without_a_test_pass(tested: LocalImage, registry: LocalRegistry, tmp_path: Path) -> None:
    code, output = _publish(registry.address, env={"XDG_STATE_HOME": str(tmp_path)})
    assert code != 0 and "has no passing in-image test run" in output
    assert registry.blob_count() == 0


def test_bad_input(tested: LocalImage) -> None:
    code, output = _publish(f"127.0.0.1:{free_port()}", env=FAST_FAILURE, timeout=600)
    assert code != 0 and "does not answer" in output and "Traceback" not in output
    code, output = _publish("Bad Host//x")
    assert code != 0 and "invalid --registry 'Bad Host//x'" in output
    result = run_pudev("publish", "cu118", "--registry", "127.0.0.1:5000")
    assert result.returncode != 0 and "build it first" in result.stderr


def test_registry_stopped_mid_publish_then_completed(tested: LocalImage, registry: LocalRegistry) -> None:
    process = subprocess.Popen([*PUDEV, "publish", "--profile", "local", "--registry", registry.address],
                               cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, **FAST_FAILURE})
    deadline = time.monotonic() + 900
    while registry.blob_count() < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    registry.stop()  # mid-push: some layers landed, the manifest and tags did not
    output, _ = process.communicate(timeout=1800)
    assert process.returncode != 0, output
    assert "publish of pudev-local/pytorch-universal-dev:cu121" in output and "failed" in output
    assert "remote state of each tag:" in output
    assert "not landed (as this run saw it; the registry does not answer now)" in output
    assert "Traceback" not in output

    registry.start()
    code, output = _publish(registry.address)
    assert code == 0, output
    assert "pudev: pushed" in output and "published " in output

    code, again = _publish(registry.address)
    assert code == 0, again
    assert "pudev: pushed" not in again and "tagged" not in again  # nothing done twice
    assert again.count("already at") == len(run_pudev("tags", "--profile", "local").stdout.split())


def test_pull_back_by_tag_and_digest_and_smoke_test(tested: LocalImage, registry: LocalRegistry) -> None:
    published = run_pudev("publish", "--profile", "local", "--registry", registry.address, check=True).stdout
    line = next(text for text in published.splitlines() if text.startswith("published "))
    by_digest = line.split()[1].rstrip(":")
    repository = by_digest.split("@")[0]
    tags = run_pudev("tags", "--profile", "local", check=True).stdout.split()
    engine.run(["rmi", "--force", tested.image_id], check=False)  # every name and digest reference
    assert engine.image_id(tested.tag) is None and engine.inspect_image(tested.image_id) is None
    assert all(engine.image_id(f"{repository}:{tag}") is None for tag in tags)
    try:
        engine.run(["pull", f"{repository}:cu121"], timeout=3600)
        engine.run(["pull", by_digest], timeout=3600)
        assert engine.image_id(by_digest) == tested.image_id  # the same image, byte for byte
        smoke = engine.run(["run", "--rm", by_digest, "pudev", "selftest", "--", "-q", "-m", "smoke"], check=False,
                           timeout=1800)
        assert smoke.returncode == 0, smoke.stdout[-4000:]
        assert " passed" in smoke.stdout
    finally:
        engine.run(["tag", by_digest, tested.tag], check=False)  # later tests and runs use the local name


def test_pin_resolves_digests_through_the_registry_api(registry: LocalRegistry, tmp_path: Path) -> None:
    """Point a copy of the variant file at images in the local registry; pin writes their digests."""
    from pudev.matrix import load_matrix
    from pudev.paths import VARIANTS_FILE

    # Two small images with different digests (the second only adds a label): quick to push.
    labelled = subprocess.run([engine.docker_cli(), "build", "--quiet", "-t", "pudev-pin-probe:latest", "-"],
                              input="FROM pudev-standin/os:bookworm\nLABEL org.pudev.pin-probe=1\n", text=True,
                              capture_output=True, check=True, env=engine.docker_env())
    assert labelled.stdout.strip()
    sources = {"pudev-standin/os:bookworm": f"{registry.address}/mirror/os:bookworm",
               "pudev-pin-probe:latest": f"{registry.address}/mirror/cuda:11.8-devel"}
    pushed = {}
    for local, remote in sources.items():
        engine.run(["tag", local, remote])
        output = engine.run(["push", remote], timeout=1800).stdout
        pushed[remote] = output.split("digest: ")[1].split()[0]
        engine.run(["rmi", remote], check=False)
    text = VARIANTS_FILE.read_text()
    for official in ("pytorch/pytorch:2.5.1-cuda11.8-cudnn9-runtime", "pytorch/pytorch:2.5.1-cuda12.1-cudnn9-runtime",
                     "nvidia/cuda:12.1.1-devel-ubuntu22.04"):
        text = text.replace(f'"{official}"', f'"{registry.address}/mirror/os:bookworm"')
    text = text.replace('"nvidia/cuda:11.8.0-devel-ubuntu22.04"', f'"{registry.address}/mirror/cuda:11.8-devel"')
    variants = tmp_path / "variants.toml"
    variants.write_text(text)
    result = run_pudev("pin", "--variants-file", str(variants), check=True)
    assert "pinned 2 image(s)" in result.stdout
    matrix = load_matrix(variants)
    cu118 = matrix.get("cu118")
    assert cu118.base_image == f"{registry.address}/mirror/os:bookworm@{pushed[sources['pudev-standin/os:bookworm']]}"
    assert cu118.toolkits[0].image.endswith("@" + pushed[sources["pudev-pin-probe:latest"]])
    engine.run(["rmi", "pudev-pin-probe:latest"], check=False)
    assert "# The build matrix" in variants.read_text()  # comments and layout survive
    again = run_pudev("pin", "--variants-file", str(variants), check=True)
    assert "pinned 0 image(s)" in again.stdout  # already pinned to the current digests
