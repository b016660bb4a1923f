"""One tag, every platform: the stand-in profile whose variant is built for more than one platform
(`local-current`: cu132 on amd64 here and on arm64 under binfmt emulation) has each platform's build
pushed by digest to the realistic registry, each digest tested (the pass this run's in-image suite made
of that same image id is recorded against the digest: the CPU half here, the platform scope under
emulation), and promoted as one OCI image index. The
registry then serves one index under the tag whose children are exactly the tested digests, and the
tag pulls back for each platform and runs there (`uname -m`, torch). Promoting one platform alone is
refused, naming the platform left out."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from e2e_support import (
    Profiles,
    build_args,
    emulated,
    profile_variant,
    registry_client,
    run_pudev,
    split_build,
    standin_builds,
)
from realistic_registry import RealisticRegistry
from shards import NEWEST, shard_of

from pudev.common.halves import PLATFORM_SCOPE
from pudev.common.platforms import native_platform
from pudev.engine import docker
from pudev.registry.client import RegistryClient
from pudev.registry.oci import OCI_INDEX
from pudev.release.targets import parse_digest_ref
from pudev.release.test import results

MACHINE = {"linux/amd64": "x86_64", "linux/arm64": "aarch64"}  # what `uname -m` says on each platform
BY_PROFILE: dict[str, list[str]] = {}
for _build in standin_builds():
    BY_PROFILE.setdefault(split_build(_build)[0], []).append(_build)
MULTI = [builds for builds in BY_PROFILE.values() if len(builds) > 1]
# In the shard of its other platform's build: that shard builds it, and this host's build again from the cache.
pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.shard(shard_of(MULTI[0][-1]) if MULTI else NEWEST)]


@pytest.fixture(scope="module")
def builds() -> list[str]:
    if not MULTI:
        pytest.fail("no stand-in profile is built for two platforms, so nothing proves one tag for both; "
                    "docker/standins/standins.toml must keep one")
    return MULTI[0]


@pytest.fixture(scope="module")
def registry(run_registry: RealisticRegistry, docker_engine: str) -> Iterator[RealisticRegistry]:
    with registry_client(run_registry):
        yield run_registry


@pytest.fixture(scope="module")
def children(builds: list[str], profiles: Profiles, registry: RealisticRegistry) -> dict[str, str]:
    """Each platform's candidate by digest, pushed and with its pass recorded (the CPU half, or under
    emulation the platform scope)."""
    found = {}
    for build in builds:
        suite = profiles.suite(build)
        assert suite.returncode == 0, f"{build}: the index needs each platform's suite to pass first"
        out = run_pudev("push", *build_args(build), "--registry", registry.address, timeout=3600, check=True).stdout
        reference = next(line.split()[1] for line in out.splitlines() if line.startswith("candidate "))
        scope = "--platform-only" if emulated(build) else "--cpu-only"
        tested = run_pudev("test", reference, scope, "--reuse-local-pass", timeout=3600)
        assert tested.returncode == 0, tested.stdout[-3000:] + tested.stderr[-2000:]
        found[profile_variant(build).platform] = reference
    return found


def _promote(*references: str) -> tuple[int, str]:
    # What each child must have passed is its own label's: an emulated build was built requiring its
    # platform scope (e2e_support.build_args), the native one its CPU half.
    result = run_pudev("promote", *references, timeout=1800)
    return result.returncode, result.stdout + result.stderr


def test_one_platform_alone_is_refused_naming_the_other(builds: list[str], children: dict[str, str]) -> None:
    alone, *others = children
    code, output = _promote(children[alone])
    assert code == 2  # pudev refuses bad input with exit status 2
    assert len(output.strip().splitlines()) == 1, output
    assert all(platform in output for platform in others), output


@pytest.fixture(scope="module")
def index(builds: list[str], children: dict[str, str], registry: RealisticRegistry) -> tuple[str, dict[str, object]]:
    """The promoted tag's reference, and the index it serves."""
    code, output = _promote(*children.values())
    assert code == 0, output
    variant = profile_variant(builds[0])
    release = parse_digest_ref(next(iter(children.values())), flag="index").target.release
    body, _ = RegistryClient(registry.address).manifest(release.repository, variant.name)
    return release.ref(variant.name), json.loads(body)


def test_the_tag_is_one_index_of_exactly_the_tested_digests(index: tuple[str, dict[str, object]],
                                                            children: dict[str, str],
                                                            registry: RealisticRegistry) -> None:
    _, served = index
    assert served["mediaType"] == OCI_INDEX
    manifests = served["manifests"]
    assert isinstance(manifests, list)
    listed = {f"{entry['platform']['os']}/{entry['platform']['architecture']}": entry["digest"]
              for entry in manifests}
    assert listed == {platform: reference.split("@")[1] for platform, reference in children.items()}
    client = RegistryClient(registry.address)
    for platform, reference in children.items():
        recorded = results(client, parse_digest_ref(reference, flag="index"))
        half = PLATFORM_SCOPE if platform != native_platform() else "cpu"
        assert any(result.half == half and result.passed for result in recorded), platform


def test_each_platform_pulls_back_from_the_tag_and_runs_there(index: tuple[str, dict[str, object]],
                                                             builds: list[str]) -> None:
    tag, _ = index
    variant = profile_variant(builds[0])
    for build in builds:
        platform = profile_variant(build).platform
        docker.run(["pull", "--platform", platform, tag], timeout=3600)
        ran = docker.run(["run", "--rm", "--platform", platform, "--entrypoint", "sh", tag, "-c",
                          "uname -m; python3 -c 'import torch; print(torch.__version__, torch.version.cuda)'"],
                         timeout=900)
        machine, versions = ran.stdout.strip().splitlines()[-2:]
        assert machine == MACHINE[platform]
        assert versions.split()[0].split("+")[0] == variant.torch and versions.split()[1] == variant.cuda
