"""What a command asks the engine, it asks once: the BuildKit probe, and an image's inventory
(one throwaway container, whatever reads it: the tags, the manifest, the SBOM)."""

from __future__ import annotations

import collections
import contextlib
import io
import json
import stat
import types
from pathlib import Path

import pytest
from matrices import WriteMatrix

from pudev.common.errors import PudevError
from pudev.engine import builds, docker, images
from pudev.release.tags import read_facts
from pudev.reports.manifest import read_manifest
from pudev.reports.sbom import write_sbom

INVENTORY = {"torch": "2.9.0+cu130", "cuda": "13.0", "cudnn": 91000, "python": "3.12.4", "nvcc": {},
             "pip": [{"name": "torch", "version": "2.9.0+cu130"}], "conda": None,
             "dpkg": [{"name": "zsh", "version": "5.9"}], "os": {"id": "debian", "version_id": "12"}}
# A docker client that logs every call and knows one image.
FAKE = """#!/bin/sh
echo "$*" >> "{log}"
case "$*" in
  "version --format "*) echo '20.10.24|20.10.24' ;;
  "image inspect "*) echo '[{{"Id": "sha256:1111", "Size": 1, "RepoDigests": [], "Config": {{"Labels": {{}}}}}}]' ;;
  "history "*) echo '{{"Size": "1", "CreatedBy": "RUN x"}}' ;;
  "run --rm --entrypoint pudev "*" inventory") echo '{inventory}' ;;
  "run --rm --entrypoint pudev "*" inventory --files") echo '{inventory_files}' ;;
  *) echo "unexpected: docker $*" >&2; exit 99 ;;
esac
"""


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "calls.log"
    log.touch()
    fake = tmp_path / "docker"
    fake.write_text(FAKE.format(log=log, inventory=json.dumps(INVENTORY),
                                inventory_files=json.dumps({**INVENTORY, "files": {}})))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PUDEV_DOCKER", str(fake))
    return log


def _version_calls(calls: Path) -> int:
    return sum(line.startswith("version ") for line in calls.read_text().splitlines())


def test_buildkit_is_probed_once(calls: Path) -> None:
    for _ in range(3):
        docker.require_buildkit()
    assert _version_calls(calls) == 1


def test_a_build_asks_the_client_and_the_engine_in_one_call(calls: Path) -> None:
    docker.require_daemon()
    docker.require_buildkit()
    assert _version_calls(calls) == 1


def test_each_later_check_for_the_engine_asks_it_again(calls: Path) -> None:
    # (a long test run checks that the engine is still there: an old answer would hide that it went)
    docker.require_buildkit()
    for _ in range(3):
        docker.require_daemon()
    assert _version_calls(calls) == 3


def test_the_inventory_is_read_by_one_container_for_every_reader(calls: Path) -> None:
    image = "example/dev-image:cu130"
    manifest = read_manifest(image)  # it asks for the file census too, which serves the others
    facts = read_facts(image)
    sbom = json.loads(write_sbom(image))
    runs = [line for line in calls.read_text().splitlines() if line.startswith("run ")]
    assert runs == [f"run --rm --entrypoint pudev {image} inventory --files"]
    assert (facts.torch, facts.cuda, facts.python) == ("2.9.0", "13.0", "3.12")
    assert manifest["pip"] == INVENTORY["pip"] and manifest["torch"] == INVENTORY["torch"]
    assert sbom["components"], "the SBOM was built from the same inventory"
    images.forget_inventories()
    read_facts(image)
    assert sum(line.startswith("run ") for line in calls.read_text().splitlines()) == 2, "a new command reads anew"
    read_manifest(image)  # a read without the census cannot serve the manifest
    runs = [line for line in calls.read_text().splitlines() if line.startswith("run ")]
    assert runs[-1] == f"run --rm --entrypoint pudev {image} inventory --files" and len(runs) == 3


def test_a_build_inspects_its_input_images_once_and_together(monkeypatch: pytest.MonkeyPatch,
                                                              matrix_file: WriteMatrix, lock_folder: Path) -> None:
    """One question for all input images and the image the build replaces, whose answer is also each input's
    identity: no second and third, and none after the build (BuildKit writes the new image's id)."""
    from pudev.building import builder
    from pudev.building.input_images import input_images
    from pudev.building.plan_assembly import BuildOptions, plan_builds
    from pudev.common.errors import PudevError
    from pudev.config.loader import load_matrix
    from pudev.engine import builds

    asked: collections.Counter[str] = collections.Counter()

    def inspect_image(ref: str) -> dict[str, object]:
        asked[ref] += 1
        return {"Id": f"sha256:{len(ref):064x}", "RepoDigests": [f"x@sha256:{sum(map(ord, ref)):064x}"]}

    def popen(command: list[str], **_: object) -> None:
        raise PudevError("stopped before docker ran")

    calls: list[list[str]] = []

    def inspect_images(refs: list[str]) -> dict[str, object]:
        calls.append(list(refs))
        return {ref: inspect_image(ref) for ref in refs}

    monkeypatch.setattr(docker, "inspect_image", inspect_image)
    monkeypatch.setattr(docker, "inspect_images", inspect_images)
    monkeypatch.setattr(docker, "require_daemon", lambda: None)
    monkeypatch.setattr(docker, "require_buildkit", lambda: "docker")
    monkeypatch.setattr(builder, "one_build_at_a_time", lambda _: contextlib.nullcontext())
    monkeypatch.setattr(builds, "subprocess", types.SimpleNamespace(Popen=popen, PIPE=-1, STDOUT=-2))
    variant = load_matrix(matrix_file()).get("cu130")
    (plan,) = plan_builds([variant], BuildOptions(no_ca_bundle=True))
    with pytest.raises(PudevError, match="stopped before docker ran"):
        builder.run_build(plan)
    inputs = [image.reference for image in input_images(variant)]
    assert {ref: asked[ref] for ref in inputs} == dict.fromkeys(inputs, 1)
    assert calls == [[*inputs, plan.tag]]


class _FinishedBuild:
    """What builds.BuildKitBuild starts: a build that succeeds (given no --iidfile: its id is asked after)."""

    def __init__(self, command: list[str]) -> None:
        assert "--iidfile" not in command
        self.stdout = iter(["#1 DONE 0.0s\n"])

    def wait(self, timeout: float | None = None) -> int:
        return 0

    def poll(self) -> int:
        return 0


@pytest.mark.parametrize("client", ["20.10.24", "28.0.0"])
def test_the_new_image_id_is_the_engines_on_every_client(
        monkeypatch: pytest.MonkeyPatch, matrix_file: WriteMatrix, lock_folder: Path, client: str) -> None:
    """A 20.10 client would write the engine's id to --iidfile, buildx the config's digest, which an engine with
    the containerd image store does not list the image by: so pudev asks the engine, once, whatever the client."""
    from pudev.building import builder
    from pudev.building.plan_assembly import BuildOptions, plan_builds
    from pudev.config.loader import load_matrix
    from pudev.engine import builds

    engine_id = "sha256:" + "e" * 64
    asked: list[str] = []

    def image_id(ref: str) -> str:
        asked.append(ref)
        return engine_id

    def inspect_images(refs: list[str]) -> dict[str, object]:
        return {ref: {"Id": f"sha256:{len(ref):064x}", "RepoDigests": []} for ref in refs}

    monkeypatch.setattr(docker, "inspect_images", inspect_images)
    monkeypatch.setattr(docker, "image_id", image_id)
    monkeypatch.setattr(docker, "require_daemon", lambda: None)
    monkeypatch.setattr(docker, "require_buildkit", lambda: "docker")
    monkeypatch.setattr(docker, "docker_cli", lambda: "docker")
    monkeypatch.setattr(docker, "drop_if_untagged", lambda *_, **__: None)
    monkeypatch.setitem(docker.versions.clients, "docker", client)
    monkeypatch.setattr(builder, "one_build_at_a_time", lambda _: contextlib.nullcontext())
    monkeypatch.setattr(builds, "subprocess", types.SimpleNamespace(
        Popen=lambda command, **_: _FinishedBuild(command), PIPE=-1, STDOUT=-2))
    (plan,) = plan_builds([load_matrix(matrix_file()).get("cu130")], BuildOptions(no_ca_bundle=True))
    built = builder.run_build(plan, sink=io.StringIO())
    assert asked == [plan.tag]
    assert built == engine_id


@pytest.mark.parametrize(("answer", "refused"), [
    ("28.2.2|19.03.15|Engine,containerd,runc,", True),
    ("28.2.2|20.10.24+dfsg1|Engine,containerd,runc,docker-init,", True),  # Debian 12's: no suite runs on it now
    ("28.2.2|24.0.7-0ubuntu2~22.04.1|Engine,containerd,runc,", True),
    ("28.2.2|28.5.2+dfsg4|Engine,containerd,runc,docker-init,", False),  # Debian sid's, the suite's engine
    ("29.1.3|29.1.3|Engine,containerd,runc,docker-init,", False),
    ("28.2.2|4.3.1|Podman Engine,", False),  # podman's numbers are not Docker's
])
def test_an_engine_below_the_floor_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           answer: str, refused: bool) -> None:
    fake = tmp_path / "docker"
    fake.write_text(f"#!/bin/sh\necho '{answer}'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PUDEV_DOCKER", str(fake))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    if not refused:
        docker.require_daemon()
        return
    with pytest.raises(PudevError) as error:
        docker.require_daemon()
    message = str(error.value)
    assert "\n" not in message and answer.split("|")[1] in message and docker.ENGINE_FLOOR in message
    assert "Docker 28 or newer" in message


def test_a_build_asks_buildx_for_no_default_attestation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """buildx's default provenance attestation gives each build of an unchanged context a new image id on the
    containerd image store (the benchmark log, 2026-12-06), and pudev's proof keys on that id."""
    seen = tmp_path / "env"
    fake = tmp_path / "docker"
    fake.write_text(f"#!/bin/sh\ncase \"$1\" in\n  version) echo '28.5.2|28.5.2|Engine,' ;;\n"
                    f"  buildx) exit 0 ;;\n  *) env > {seen} ;;\nesac\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PUDEV_DOCKER", str(fake))
    monkeypatch.delenv("BUILDX_NO_DEFAULT_ATTESTATIONS", raising=False)
    kept: collections.deque[str] = collections.deque()
    assert builds.BuildKitBuild(["build", "."]).run(io.StringIO(), kept) == 0
    assert "BUILDX_NO_DEFAULT_ATTESTATIONS=1" in seen.read_text().splitlines()
