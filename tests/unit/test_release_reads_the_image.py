"""Promotion follows the image, not the checkout: each candidate's labels (its variant, the test
scopes it must pass, whether it is `latest`, the platforms its variant is built for) decide, read
through the registry from its config alone. A checkout whose default_variant and required_tests
changed after the build changes nothing, and promote never reads the variant file. Candidates
that disagree, or an image built before pudev labelled it so, are refused in one line."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from cli_support import fails
from matrices import WriteMatrix, synthetic, write_matrix
from memory_registry import RELEASE, MemoryRegistry, digest_of

from pudev.building.labels import SourceInfo, build_labels
from pudev.building.record import planned_record
from pudev.cli import main
from pudev.common.halves import PLATFORM_SCOPE, SUITE_HALVES
from pudev.config import loader
from pudev.config.model import Variant
from pudev.config.selection import Selection, resolve
from pudev.release import promote as promotion
from pudev.release.push import candidate_tag
from pudev.release.targets import DigestRef
from pudev.release.test import SuiteResult

CANDIDATES = RELEASE.candidates
SOURCE = SourceInfo(revision="abcdef0" * 5 + "abcde", created="2026-03-04T05:06:07Z", url="")
FACTS = {"torch": "3.1.0", "cuda": "13.0", "python": "3.12", "revision": SOURCE.revision, "created": SOURCE.created}
TAGS = ["3.1.0-cu130-py3.12", "cu130", "cu130-20260304", "cu130-abcdef0"]  # compute_tags of FACTS, written out
AMD64, ARM64 = "linux/amd64", "linux/arm64"


def _built(path: Path, name: str = "cu130", platform: str = "") -> Variant:
    """The variant as a build from the checkout at `path` made it."""
    (variant,) = resolve(Selection(names=(name,), variants_file=path, platform=platform)).variants
    return variant


def _layer(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def push(registry: MemoryRegistry, variant: Variant, *, labels: dict[str, str] | None = None) -> DigestRef:
    """What `pudev push` leaves in the candidate repository for a build of `variant`: its config with the
    labels the build gave it, a large layer, then the record step's small layer holding /etc/pudev/image.json."""
    system, architecture = variant.platform.split("/")
    given = build_labels(variant, SOURCE) if labels is None else labels
    config = json.dumps({"os": system, "architecture": architecture, "config": {"Labels": given}}).encode()
    record = planned_record(variant, [], lock_file="lock.txt", lock_sha256="0" * 64, revision=SOURCE.revision)
    layers = [_layer({"usr/lib/big": f"the base of {variant.platform}".encode()}),
              _layer({"etc/pudev/image.json": json.dumps(record).encode(), "usr/lib/python3/pudev.pth": b"x"})]
    for blob in (config, *layers):
        registry.blobs[(CANDIDATES.repository, digest_of(blob))] = blob
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest_of(config),
                   "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest_of(layer),
                    "size": len(layer)} for layer in layers],
    }).encode()
    registry.put_manifest(CANDIDATES.repository, candidate_tag(variant.name, digest_of(config)), manifest,
                          "application/vnd.oci.image.manifest.v1+json")
    registry.writes.clear()
    return DigestRef(CANDIDATES, digest_of(manifest))


Recorded = dict[str, list[SuiteResult]]


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Recorded:
    """The results `pudev test` recorded, by candidate digest (their registry form is tested elsewhere)."""
    found: Recorded = {}
    monkeypatch.setattr(promotion, "results", lambda _client, candidate: list(found.get(candidate.digest, [])))
    return found


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> MemoryRegistry:
    memory = MemoryRegistry()
    monkeypatch.setattr(promotion, "RegistryClient", lambda *_args, **_kwargs: memory)
    return memory


@pytest.fixture
def no_variant_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Promote must not read the checkout's variant file at all."""
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("pudev promote read the variant file")
    monkeypatch.setattr(loader, "load_matrix", refuse)


def passed(recorded: Recorded, candidate: DigestRef, variant: Variant, *halves: str) -> None:
    for half in halves:
        recorded.setdefault(candidate.digest, []).append(SuiteResult(
            candidate.digest, half, True, variant.name, "", dict(FACTS), {"passed": 1},
            f"2026-03-04T06:00:{len(recorded[candidate.digest]):02d}Z"))  # no candidate tag: promote.py's check


def _promote(capsys: pytest.CaptureFixture[str], *references: DigestRef) -> str:
    """The promote's last line: what it promoted, and its tags."""
    assert main(["promote", *(str(reference) for reference in references)]) == 0, capsys.readouterr().err
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_the_promotion_follows_the_images_labels_not_the_changed_checkout(
        matrix_file: WriteMatrix, registry: MemoryRegistry, recorded: Recorded, no_variant_file: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = matrix_file()  # cu130 is the default variant and requires both halves
    variant = _built(path)
    assert variant.latest and variant.required_tests == SUITE_HALVES
    candidate = push(registry, variant)
    # After the build, the checkout moves on: another default variant, and only the CPU half required.
    changed = synthetic()
    changed["default_variant"] = "cu129"
    changed["variants"]["cu130"]["required_tests"] = ["cpu"]
    write_matrix(path, changed)
    passed(recorded, candidate, variant, "cpu")
    line = fails(["promote", str(candidate)], capsys)
    assert "has no gpu test result, so it was never tested that way" in line  # the image requires both
    assert registry.release_writes() == []
    passed(recorded, candidate, variant, "gpu")
    out = _promote(capsys, candidate)
    assert out == f"promoted {RELEASE.by_digest(candidate.digest)}: {', '.join([*TAGS, 'latest'])}"
    assert registry.tags[(RELEASE.repository, "latest")] == candidate.digest  # latest, as the image says


def test_an_image_that_was_not_the_default_is_not_tagged_latest(matrix_file: WriteMatrix, registry: MemoryRegistry,
                                                                recorded: Recorded, no_variant_file: None,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    data = synthetic()
    data["default_variant"] = "cu129"
    data["variants"]["cu130"]["required_tests"] = ["cpu"]
    path = matrix_file(data)
    variant = _built(path)
    candidate = push(registry, variant)
    write_matrix(path, synthetic())  # the checkout now makes cu130 the default, requiring both halves
    passed(recorded, candidate, variant, "cpu")
    assert _promote(capsys, candidate).endswith(": " + ", ".join(TAGS))
    assert (RELEASE.repository, "latest") not in registry.tags


def _two_platforms(path: Path) -> tuple[Variant, Variant]:
    data = synthetic()
    data["variants"]["cu130"]["platforms"] = [AMD64, ARM64]
    for toolkit in data["toolkits"].values():
        toolkit["platforms"] = [AMD64, ARM64]
    data["variants"]["cu130"]["on"] = {ARM64: {"required_tests": [PLATFORM_SCOPE]}}
    write_matrix(path, data)
    return _built(path, platform=AMD64), _built(path, platform=ARM64)


def test_each_platform_is_held_to_its_own_label_and_the_labels_name_the_platforms(
        matrix_file: WriteMatrix, registry: MemoryRegistry, recorded: Recorded, no_variant_file: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    amd64, arm64 = _two_platforms(matrix_file())
    assert arm64.required_tests == (PLATFORM_SCOPE,)
    amd, arm = push(registry, amd64), push(registry, arm64)
    passed(recorded, amd, amd64, *SUITE_HALVES)
    passed(recorded, arm, arm64, PLATFORM_SCOPE)  # all the arm64 build's own label asks for
    line = fails(["promote", str(amd)], capsys)  # its label says the variant is built for arm64 too
    assert f"no candidate is given for {ARM64}" in line
    out = _promote(capsys, arm, amd)
    assert out.startswith(f"promoted {RELEASE.host}/{RELEASE.repository}@sha256:")


def test_candidates_that_disagree_on_latest_are_refused_naming_both(
        matrix_file: WriteMatrix, registry: MemoryRegistry, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    amd64, arm64 = _two_platforms(matrix_file())
    amd = push(registry, amd64)
    arm = push(registry, arm64, labels={**build_labels(arm64, SOURCE), "org.pudev.latest": "false"})
    line = fails(["promote", str(amd), str(arm)], capsys)
    assert "the candidates disagree on being latest (label org.pudev.latest)" in line
    assert f"{amd}: True" in line and f"{arm}: False" in line
    assert registry.release_writes() == []


def test_candidates_of_two_variants_are_refused(matrix_file: WriteMatrix, registry: MemoryRegistry,
                                               recorded: Recorded, capsys: pytest.CaptureFixture[str]) -> None:
    path = matrix_file()
    first, second = push(registry, _built(path, "cu130")), push(registry, _built(path, "cu129"))
    line = fails(["promote", str(first), str(second)], capsys)
    assert "disagree on their variant (label org.pudev.variant)" in line and "cu129" in line and "cu130" in line


@pytest.mark.parametrize("dropped", ["org.pudev.required-tests", "org.pudev.latest", "org.pudev.image",
                                     "org.pudev.platforms"])
def test_an_image_built_by_an_older_pudev_says_so_and_how_to_fix_it(
        matrix_file: WriteMatrix, registry: MemoryRegistry, recorded: Recorded, capsys: pytest.CaptureFixture[str],
        dropped: str) -> None:
    variant = _built(matrix_file())
    older = {key: value for key, value in build_labels(variant, SOURCE).items() if key != dropped}
    candidate = push(registry, variant, labels=older)
    line = fails(["promote", str(candidate)], capsys)
    assert f"{candidate} carries no {dropped} label: it was built by an older pudev" in line
    assert "rebuild it with this pudev (`pudev build cu130`)" in line


@pytest.mark.parametrize("flag", [["--profile", "local"], ["--set", "required_tests=platform"],
                                  ["--variants-file", "docker/variants.toml"], ["--platform", "linux/arm64"]])
def test_promote_takes_no_variant_selection(capsys: pytest.CaptureFixture[str], registry: MemoryRegistry,
                                            flag: list[str]) -> None:
    """Promote reads the candidates alone: a selection flag is refused in one line, before the registry is asked."""
    line = fails(["promote", f"{CANDIDATES.host}/{CANDIDATES.repository}@sha256:{'0' * 64}", *flag], capsys)
    assert f"unrecognized arguments: {flag[0]}" in line and "--help" in line
    assert registry.writes == []
