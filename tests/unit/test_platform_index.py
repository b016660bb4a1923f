"""`promote_index` on a registry kept in memory: one tag for every platform is an OCI image index whose
children are exactly the candidates given, each with the platform its own config declares, each copied
to the release repository by digest. It is refused, with nothing tagged and the platform named, when a
child failed or was never tested, changed after testing, a declared platform has no candidate or one
has two, or the children's facts give different tags."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from memory_registry import RELEASE, MemoryRegistry, digest_of

from pudev.common.errors import PudevError
from pudev.common.halves import SUITE_HALVES
from pudev.registry.oci import OCI_INDEX
from pudev.release import test as release_test
from pudev.release.promote import promote_index
from pudev.release.targets import DigestRef
from pudev.release.test import SuiteResult, platform_child

AMD64, ARM64 = "linux/amd64", "linux/arm64"
PLATFORMS = (AMD64, ARM64)
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CANDIDATES = RELEASE.candidates
VARIANT = "cu130"
FACTS = {"torch": "3.1.0", "cuda": "13.0", "python": "3.12", "revision": "abcdef0123456789" * 2 + "abcdef01",
         "created": "2026-03-04T05:06:07Z"}
# What compute_tags gives FACTS, written out: the test does not ask the code under test.
TAGS = ["3.1.0-cu130-py3.12", "cu130", "cu130-20260304", "cu130-abcdef0"]


@dataclass
class Pushed:
    """A candidate as `pudev push` leaves it, and the results `pudev test` recorded against it."""

    ref: DigestRef
    tag: str
    platform: str
    results: list[SuiteResult] = field(default_factory=list)


def push(registry: MemoryRegistry, platform: str, *, config_variant: str = "", layer: bytes = b"") -> Pushed:
    system, architecture = platform.split("/")
    config = {"os": system, "architecture": architecture, "rootfs": {"type": "layers"},
              **({"variant": config_variant} if config_variant else {})}
    config_digest = registry.put_blob(CANDIDATES.repository, json.dumps(config).encode())
    layer_digest = registry.put_blob(CANDIDATES.repository, layer or f"layer of {platform}".encode())
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": 1},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest, "size": 1}],
    }).encode()
    tag = f"{VARIANT}-{digest_of(manifest)[7:19]}"
    registry.writes.clear()
    registry.put_manifest(CANDIDATES.repository, tag, manifest, OCI_MANIFEST)
    registry.writes.clear()
    return Pushed(DigestRef(CANDIDATES, digest_of(manifest)), tag, platform)


def passed(candidate: Pushed, *halves: str, facts: dict[str, str] | None = None,
           outcome: bool = True) -> Pushed:
    for half in halves or ("cpu",):
        candidate.results.append(SuiteResult(candidate.ref.digest, half, outcome, VARIANT, candidate.tag,
                                             dict(facts or FACTS), {}, f"2026-03-04T06:00:0{len(candidate.results)}Z"))
    return candidate


def _promote(registry: MemoryRegistry, *candidates: Pushed, required: tuple[str, ...] = ("cpu",),
             is_default: bool = False) -> tuple[DigestRef, list[str]]:
    return promote_index([c.ref for c in candidates], found={c.ref.digest: c.results for c in candidates},
                         variant=VARIANT, platforms=PLATFORMS, is_default=is_default,
                         required=dict.fromkeys(PLATFORMS, required), client=registry)


def _refused(registry: MemoryRegistry, *candidates: Pushed, required: tuple[str, ...] = ("cpu",)) -> str:
    with pytest.raises(PudevError) as caught:
        _promote(registry, *candidates, required=required)
    message = str(caught.value)
    assert "\n" not in message
    assert registry.release_writes() == [], "a refused promote writes nothing to the release repository"
    return message


@pytest.fixture
def registry() -> MemoryRegistry:
    return MemoryRegistry()


def test_both_platforms_passed_gives_one_index_under_every_tag(registry: MemoryRegistry) -> None:
    amd = passed(push(registry, AMD64), "cpu", "gpu")
    arm = passed(push(registry, ARM64), "cpu", "gpu")
    index_ref, tags = _promote(registry, arm, amd, required=SUITE_HALVES, is_default=True)  # any order given
    assert tags == [*TAGS, "latest"]
    assert index_ref.target == RELEASE
    for tag in tags:
        assert registry.tags[(RELEASE.repository, tag)] == index_ref.digest
    body, media_type = registry.manifests[(RELEASE.repository, index_ref.digest)]
    assert media_type == OCI_INDEX and digest_of(body) == index_ref.digest
    index = json.loads(body)
    assert index["mediaType"] == OCI_INDEX and index["schemaVersion"] == 2
    # Exactly the tested digests, in the variant's platform order, each with its config's platform.
    assert [(child["digest"], child["platform"]) for child in index["manifests"]] == [
        (amd.ref.digest, {"architecture": "amd64", "os": "linux"}),
        (arm.ref.digest, {"architecture": "arm64", "os": "linux"})]
    for child, candidate in zip(index["manifests"], (amd, arm), strict=True):
        stored, _ = registry.manifests[(RELEASE.repository, candidate.ref.digest)]  # copied by digest
        assert child["size"] == len(stored) and child["mediaType"] == OCI_MANIFEST
        assert stored == registry.manifests[(CANDIDATES.repository, candidate.ref.digest)][0]
        for blob in (json.loads(stored)["config"]["digest"], json.loads(stored)["layers"][0]["digest"]):
            assert registry.blob_exists(RELEASE.repository, blob)


def test_an_arm64_config_with_variant_v8_is_the_arm64_child(registry: MemoryRegistry) -> None:
    # Engines record arm64 images as arm64/v8; the matrix names the platform linux/arm64.
    amd = passed(push(registry, AMD64))
    arm = passed(push(registry, ARM64, config_variant="v8"))
    index_ref, _ = _promote(registry, amd, arm)
    index = json.loads(registry.manifests[(RELEASE.repository, index_ref.digest)][0])
    assert index["manifests"][1]["platform"] == {"architecture": "arm64", "os": "linux", "variant": "v8"}


@pytest.mark.parametrize("required", [("cpu",), SUITE_HALVES])
def test_a_failed_child_is_refused_naming_its_platform(registry: MemoryRegistry, required: tuple[str, ...]) -> None:
    amd = passed(push(registry, AMD64), *required)
    arm = passed(push(registry, ARM64), *required)
    passed(arm, required[-1], outcome=False)  # its latest result of that half failed
    message = _refused(registry, amd, arm, required=required)
    assert message.startswith(f"the {ARM64} child: ") and f"failed its {required[-1]} test" in message


def test_an_untested_child_is_refused_naming_its_platform(registry: MemoryRegistry) -> None:
    amd = passed(push(registry, AMD64), "cpu", "gpu")
    arm = push(registry, ARM64)
    message = _refused(registry, amd, arm, required=SUITE_HALVES)
    assert message.startswith(f"the {ARM64} child: ") and "has no cpu test result" in message
    passed(arm, "cpu")
    message = _refused(registry, amd, arm, required=SUITE_HALVES)
    assert message.startswith(f"the {ARM64} child: ") and "has no gpu test result" in message


def test_a_declared_platform_without_a_candidate_is_refused(registry: MemoryRegistry) -> None:
    amd = passed(push(registry, AMD64))
    message = _refused(registry, amd)
    assert f"no candidate is given for {ARM64}" in message


def test_two_candidates_of_one_platform_are_refused(registry: MemoryRegistry) -> None:
    first = passed(push(registry, AMD64, layer=b"one"))
    second = passed(push(registry, AMD64, layer=b"two"))
    arm = passed(push(registry, ARM64))
    message = _refused(registry, first, arm, second)
    assert f"are both {AMD64}" in message and first.ref.digest in message and second.ref.digest in message


def test_a_platform_the_variant_is_not_built_for_is_refused(registry: MemoryRegistry) -> None:
    amd = passed(push(registry, AMD64))
    arm = passed(push(registry, ARM64))
    other = passed(push(registry, "linux/ppc64le"))
    message = _refused(registry, amd, arm, other)
    assert "is linux/ppc64le, which variant cu130 is not built for" in message


@pytest.mark.parametrize(("key", "value"), [("torch", "3.1.1"), ("created", "2026-03-05T00:00:00Z"),
                                             ("python", "3.13"), ("revision", "1234567" + "0" * 33)])
def test_children_whose_facts_give_other_tags_are_refused(registry: MemoryRegistry, key: str, value: str) -> None:
    amd = passed(push(registry, AMD64))
    arm = passed(push(registry, ARM64), facts={**FACTS, key: value})
    message = _refused(registry, amd, arm)
    assert "disagree on their tags" in message and AMD64 in message and ARM64 in message


def test_a_child_whose_torch_is_for_another_cuda_is_refused_naming_its_platform(registry: MemoryRegistry) -> None:
    amd = passed(push(registry, AMD64))
    arm = passed(push(registry, ARM64), facts={**FACTS, "cuda": "12.9"})
    message = _refused(registry, amd, arm)
    assert message.startswith(f"the {ARM64} child: ") and "CUDA 12.9 (cu129) but the variant is cu130" in message


def test_a_child_changed_after_testing_is_refused_naming_its_platform(registry: MemoryRegistry) -> None:
    amd = passed(push(registry, AMD64))
    arm = passed(push(registry, ARM64))
    moved = push(registry, ARM64, layer=b"rebuilt")
    registry.tags[(CANDIDATES.repository, arm.tag)] = moved.ref.digest  # the tested tag now names another image
    message = _refused(registry, amd, arm)
    assert message.startswith(f"the {ARM64} child: ") and "changed after testing" in message


def test_an_index_given_as_a_candidate_is_refused(registry: MemoryRegistry) -> None:
    amd = passed(push(registry, AMD64))
    arm = passed(push(registry, ARM64))
    index_ref, _ = _promote(registry, amd, arm)
    body, _ = registry.manifests[(RELEASE.repository, index_ref.digest)]
    registry.put_manifest(CANDIDATES.repository, index_ref.digest, body, OCI_INDEX)
    as_candidate = Pushed(DigestRef(CANDIDATES, index_ref.digest), "", ARM64)
    registry.writes.clear()
    with pytest.raises(PudevError, match="is an index already"):
        _promote(registry, amd, as_candidate)
    assert registry.release_writes() == []


def test_each_child_is_held_to_the_halves_its_own_platform_requires(registry: MemoryRegistry) -> None:
    """amd64 requires both halves, arm64 (no GPU runner for it) the CPU half: each is checked by its own rule."""
    required = {AMD64: SUITE_HALVES, ARM64: ("cpu",)}
    amd64, arm64 = passed(push(registry, AMD64), "cpu"), passed(push(registry, ARM64), "cpu")
    with pytest.raises(PudevError, match=f"the {AMD64} child: .* has no gpu test result"):
        promote_index([amd64.ref, arm64.ref], found={c.ref.digest: c.results for c in (amd64, arm64)},
                      variant=VARIANT, platforms=PLATFORMS, is_default=False, required=required, client=registry)
    passed(amd64, "gpu")
    index, _ = promote_index([amd64.ref, arm64.ref], found={c.ref.digest: c.results for c in (amd64, arm64)},
                             variant=VARIANT, platforms=PLATFORMS, is_default=False, required=required,
                             client=registry)
    assert index.digest.startswith("sha256:")


def test_testing_an_index_picks_the_named_or_this_hosts_platform(registry: MemoryRegistry,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`pudev test REF` on an index tests one child: --platform's, else the host's; a missing one is one line."""
    amd64, arm64 = passed(push(registry, AMD64)), passed(push(registry, ARM64))
    index, _ = _promote(registry, amd64, arm64)
    assert platform_child(registry, index, ARM64) == DigestRef(RELEASE, arm64.ref.digest)
    monkeypatch.setattr(release_test, "native_platform", lambda: AMD64)
    assert platform_child(registry, index, "") == DigestRef(RELEASE, amd64.ref.digest)
    assert platform_child(registry, amd64.ref, ARM64) == amd64.ref  # a single image is tested as it is
    monkeypatch.setattr(release_test, "native_platform", lambda: "linux/riscv64")
    with pytest.raises(PudevError) as caught:
        platform_child(registry, index, "")
    message = str(caught.value)
    assert "without a linux/riscv64 image" in message and f"{AMD64}, {ARM64}" in message and "\n" not in message
