"""Release logic without a registry: which results allow a promotion, references by
digest, the candidate tag, the SBOM from an inventory, manifest diffs, suite tallies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pudev.common.errors import PudevError
from pudev.common.halves import SUITE_HALVES
from pudev.release.artifacts import fallback_tag
from pudev.release.promote import passing_results
from pudev.release.push import candidate_tag
from pudev.release.targets import DigestRef, Target, is_image_reference, parse_digest_ref, parse_target
from pudev.release.test import SuiteResult
from pudev.reports.manifest_diff import diff_manifests
from pudev.reports.sbom import build_sbom, component_versions
from pudev.testing.suite_run import KEPT_CCACHE, KEPT_CCACHE_MOUNT, SuiteOutcome, container_options, scope_counts, tally

DIGEST = "sha256:" + "ab" * 32
CANDIDATE = DigestRef(Target("127.0.0.1:5000", "org/dev-candidates"), DIGEST)


def _result(half: str, passed: bool, variant: str = "cu130", when: str = "2026-11-30T10:00:00Z") -> SuiteResult:
    return SuiteResult(digest=DIGEST, half=half, passed=passed, variant=variant, candidate_tag="cu130-abc",
                      facts={"torch": "3.1.0", "cuda": "13.0", "python": "3.12", "revision": "r", "created": "c"},
                      tested_at=when)


def test_promotion_needs_a_pass_of_every_required_half() -> None:
    with pytest.raises(PudevError, match="has no cpu test result, so it was never tested"):
        passing_results(CANDIDATE, [], ("cpu",), "cu130")
    with pytest.raises(PudevError, match="has no gpu test result"):
        passing_results(CANDIDATE, [_result("cpu", True)], SUITE_HALVES, "cu130")
    with pytest.raises(PudevError, match="failed its gpu test"):
        passing_results(CANDIDATE, [_result("cpu", True), _result("gpu", False)], SUITE_HALVES, "cu130")
    with pytest.raises(PudevError, match="was tested as variant cu129, not cu130"):
        passing_results(CANDIDATE, [_result("cpu", True, "cu129")], ("cpu",), "cu130")
    assert passing_results(CANDIDATE, [_result("cpu", True), _result("gpu", True)], SUITE_HALVES, "cu130").passed


def test_the_latest_result_of_a_half_counts() -> None:
    later_pass = [_result("cpu", False, when="2026-11-30T10:00:00Z"), _result("cpu", True, when="2026-11-30T11:00:00Z")]
    assert passing_results(CANDIDATE, later_pass, ("cpu",), "cu130").passed
    later_fail = [_result("cpu", True, when="2026-11-30T10:00:00Z"), _result("cpu", False, when="2026-11-30T11:00:00Z")]
    with pytest.raises(PudevError, match="failed its cpu test"):
        passing_results(CANDIDATE, later_fail, ("cpu",), "cu130")


def test_references_and_repositories() -> None:
    target = parse_target("127.0.0.1:5000/org", "pudev-local/dev")
    assert target == Target("127.0.0.1:5000", "org/dev")
    assert target.candidates.repository == "org/dev-candidates" and target.candidates.release == target
    ref = parse_digest_ref(f"127.0.0.1:5000/org/dev-candidates@{DIGEST}", flag="promote")
    assert str(ref) == f"127.0.0.1:5000/org/dev-candidates@{DIGEST}"
    with pytest.raises(PudevError, match="promote cu121: not a reference by digest"):
        parse_digest_ref("cu121", flag="promote")
    assert is_image_reference(f"ghcr.io/o/x@{DIGEST}") and is_image_reference("ghcr.io/o/x:tag")
    assert not is_image_reference("cu121") and not is_image_reference("all")
    assert fallback_tag(DIGEST) == "sha256-" + "ab" * 32
    assert candidate_tag("cu121", "sha256:0123456789abcdef") == "cu121-0123456789ab"


@pytest.mark.parametrize("registry", ["", "my-org", "Bad Host//x", "ghcr.io/org:tag", "http://ghcr.io/org"])
def test_malformed_registry_references(registry: str) -> None:
    with pytest.raises(PudevError, match="not a registry"):
        parse_target(registry, "pytorch-universal-dev")


def test_suite_tally_by_half(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite>'
        '<testcase classname="test_versions" name="a"/>'
        '<testcase classname="test_versions" name="b"><failure/></testcase>'
        '<testcase classname="test_gpu" name="c"><skipped message="no GPU"/></testcase>'
        '<testcase classname="test_gpu" name="d"/></testsuite></testsuites>')
    counts = tally(junit)
    assert counts == {"cpu": {"passed": 1, "failed": 1, "skipped": 0}, "gpu": {"passed": 1, "failed": 0, "skipped": 1}}
    outcome = SuiteOutcome(code=1, gpus=False, counts=counts)
    assert not outcome.half_passed("cpu") and not outcome.half_passed("gpu")  # a skipped GPU test proves nothing


def test_the_half_the_suite_reports_wins_over_the_module(tmp_path: Path) -> None:
    """A gpu-marked test outside test_gpu.py (pudev dist's NCCL check) is in the GPU half that --gpu-only runs."""
    junit = tmp_path / "junit.xml"
    half = '<properties><property name="pudev.half" value="{}"/></properties>'
    junit.write_text(
        '<testsuites><testsuite>'
        f'<testcase classname="test_dist" name="nccl"><skipped message="no GPU"/>{half.format("gpu")}</testcase>'
        f'<testcase classname="test_dist" name="gloo">{half.format("cpu")}</testcase>'
        '<testcase classname="test_gpu" name="old"><skipped message="no GPU"/></testcase>'
        '</testsuite></testsuites>')
    counts = tally(junit)
    assert counts == {"cpu": {"passed": 1, "failed": 0, "skipped": 0}, "gpu": {"passed": 0, "failed": 0, "skipped": 2}}
    assert SuiteOutcome(code=0, gpus=False, counts=counts).half_passed("cpu")


INVENTORY = {
    "variant": "cu130", "torch": "3.1.0+cu130", "cuda": "13.0", "cudnn": 91000, "python": "3.12.3",
    "default_toolkit": "13.0", "os": {"id": "ubuntu", "version_id": "24.04"},
    "pip": [{"name": "torch", "version": "3.1.0"}, {"name": "numpy", "version": "2.4.0"}],
    "conda": None,
    "dpkg": [{"name": "zsh", "version": "5.9-6", "arch": "amd64"},
             {"name": "libc6", "version": "2.39", "arch": "amd64"},
             {"name": "libc6", "version": "2.39", "arch": "i386"}],
    "toolkits": [{"version": "12.9", "path": "/usr/local/cuda-12.9", "nvcc": "12.9.86"},
                 {"version": "13.0", "path": "/usr/local/cuda-13.0", "nvcc": "13.0.88"}],
}


def test_sbom_from_an_inventory_is_valid_cyclonedx() -> None:
    text = build_sbom(INVENTORY, name="ghcr.io/o/dev", digest=DIGEST)  # raises unless schema-valid
    data = json.loads(text)
    assert data["specVersion"] == "1.6" and data["metadata"]["component"]["version"] == DIGEST
    versions = component_versions(text)
    assert versions["pypi:torch"] == "3.1.0+cu130" and versions["deb:zsh"] == "5.9-6"
    torch = next(c for c in data["components"] if c["name"] == "torch")
    assert {"name": "pudev:torch:cuda", "value": "13.0"} in torch["properties"]
    toolkits = sorted(c["version"] for c in data["components"] if c["name"] == "cuda-toolkit")
    assert toolkits == ["12.9.86", "13.0.88"]
    purls = [c["purl"] for c in data["components"]]
    assert "pkg:deb/ubuntu/zsh@5.9-6?arch=amd64&distro=ubuntu-24.04" in purls
    assert sum(1 for purl in purls if purl.startswith("pkg:deb/ubuntu/libc6@")) == 2  # one per architecture


def test_manifest_diff_names_every_kind_of_change() -> None:
    before = {"image": "a", "pip": [{"name": "numpy", "version": "2.3.0"}, {"name": "tqdm", "version": "4"}],
              "dpkg": [{"name": "zsh", "version": "5.8"}],
              "record": {"inputs": {"base": {"source": "x", "digest": "sha256:1"}}, "revision": "r1"}}
    after = {"image": "b", "pip": [{"name": "numpy", "version": "2.4.0"}, {"name": "scipy", "version": "1.17"}],
             "dpkg": [{"name": "zsh", "version": "5.8"}],
             "record": {"inputs": {"base": {"source": "x", "digest": "sha256:2"}}, "revision": "r2"}}
    text = diff_manifests(before, after)
    assert "  ~ base x@sha256:1 -> x@sha256:2" in text and "  ~ revision r1 -> r2" in text
    assert "  ~ numpy 2.3.0 -> 2.4.0" in text and "  + scipy 1.17" in text and "  - tqdm 4" in text
    assert "dpkg packages:" not in text
    assert "no package or file changed" in diff_manifests(before, before)


def test_manifest_diff_names_the_file_groups_that_differ(tmp_path: Path) -> None:
    """The census is what `pudev inventory` counts in the image: here over a folder standing in for its root."""
    from pudev.image.inventory import census_group, file_census

    site = tmp_path / "usr/lib/python3/site-packages"
    (site / "tqdm").mkdir(parents=True)
    (site / "tqdm/std.py").write_text("x = 1\n")
    (tmp_path / "etc/pudev").mkdir(parents=True)
    (tmp_path / "etc/pudev/image.json").write_text("{}")
    (tmp_path / "etc/hosts").write_text("10.0.0.2 one-container\n")  # the engine's, per container: never counted
    for version in ("12.6", "12.9"):
        (tmp_path / f"usr/local/cuda-{version}").mkdir(parents=True)
    (tmp_path / "usr/local/cuda").symlink_to("cuda-12.6")  # a link to a folder counts as the link
    root = str(tmp_path)
    before = {"image": "a", "files": file_census(root)}
    (tmp_path / "etc/hosts").write_text("10.0.0.123 another-container\n")
    (tmp_path / "usr/local/cuda").unlink()
    (tmp_path / "usr/local/cuda").symlink_to("cuda-12.9")
    assert census_group("/usr/lib/python3/site-packages/tqdm/std.py") == "/usr/lib/python3/site-packages/tqdm"
    (site / "tqdm/std.py").write_text("x = 22\n")  # the same name, another size
    (site / "numpy").mkdir()
    (site / "numpy/core.py").write_text("")
    after = {"image": "b", "files": file_census(root)}
    text = diff_manifests(before, after)
    package = "/usr/lib/python3/site-packages"  # a Python package is one group
    assert f"  ~ {package}/tqdm: +0 files, +1 bytes" in text and f"  + {package}/numpy (1 files, 0 bytes)" in text
    assert "etc/pudev" not in text and "/etc:" not in text  # unchanged groups are not listed
    assert "  ~ /usr/local: +0 files, +0 bytes" in text  # the link moved to the other toolkit
    assert "no package or file changed" in diff_manifests(before, before)


def test_the_platform_scope_is_proven_by_its_own_run_or_by_a_cpu_half() -> None:
    with pytest.raises(PudevError, match=r"has no platform test result.*--platform-only` first"):
        passing_results(CANDIDATE, [_result("gpu", True)], ("platform",), "cu130")
    assert passing_results(CANDIDATE, [_result("platform", True)], ("platform",), "cu130").half == "platform"
    assert passing_results(CANDIDATE, [_result("cpu", True)], ("platform",), "cu130").half == "cpu"
    # The latest of the two counts: a CPU half that failed after the proof passed is a failure.
    proof_then_failed_half = [_result("platform", True, when="2026-11-30T10:00:00Z"),
                              _result("cpu", False, when="2026-11-30T11:00:00Z")]
    with pytest.raises(PudevError, match="failed its cpu test"):
        passing_results(CANDIDATE, proof_then_failed_half, ("platform",), "cu130")
    # A platform scope is not a CPU half.
    with pytest.raises(PudevError, match="has no cpu test result"):
        passing_results(CANDIDATE, [_result("platform", True)], ("cpu",), "cu130")


def test_a_platform_scope_run_counts_as_the_proof_and_never_as_the_cpu_half() -> None:
    counts = {"cpu": {"passed": 30, "failed": 0, "skipped": 0}, "gpu": {"passed": 0, "failed": 0, "skipped": 0}}
    assert scope_counts("platform", counts) == {"platform": counts["cpu"]}
    assert scope_counts("all", counts) == counts and scope_counts("cpu", counts) == counts
    assert SuiteOutcome(code=0, gpus=False, counts=scope_counts("platform", counts)).half_passed("platform")
    assert not SuiteOutcome(code=0, gpus=False, counts=scope_counts("platform", counts)).half_passed("cpu")


def test_a_kept_compile_cache_is_mounted_only_where_the_host_names_one(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEPT_CCACHE, raising=False)
    plain = container_options(tmp_path, gpus=False, require_gpu=False)
    assert not any(KEPT_CCACHE in option for option in plain)
    monkeypatch.setenv(KEPT_CCACHE, str(tmp_path / "cache"))
    kept = container_options(tmp_path, gpus=False, require_gpu=False)
    assert f"{tmp_path / 'cache'}:{KEPT_CCACHE_MOUNT}" in kept and f"{KEPT_CCACHE}={KEPT_CCACHE_MOUNT}" in kept


@pytest.mark.parametrize("store", ["containerd", "graph driver"])
def test_a_second_push_of_the_same_build_sends_nothing_on_either_store(
        store: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The local image id is the manifest's digest on the containerd image store and the config's on the
    graph driver store; a candidate already there is found by either (it was found by the config's alone)."""
    from memory_registry import MemoryRegistry, digest_of

    from pudev.engine import docker, images
    from pudev.release import push

    config = b'{"rootfs": {"type": "layers", "diff_ids": []}}'
    manifest = json.dumps({"schemaVersion": 2, "config": {"digest": digest_of(config), "size": len(config)},
                           "layers": []}).encode()
    image_id = digest_of(manifest) if store == "containerd" else digest_of(config)
    registry = MemoryRegistry()
    target = Target("registry.example", "org/dev-image")
    registry.put_manifest(target.candidates.repository, candidate_tag("cu130", image_id), manifest,
                          "application/vnd.docker.distribution.manifest.v2+json")
    monkeypatch.setattr(push, "RegistryClient", lambda *_args, **_kwargs: registry)
    monkeypatch.setattr(images, "require_image", lambda _tag: {"Id": image_id})
    monkeypatch.setattr(docker, "run", lambda *_args, **_kwargs: pytest.fail("pushed again"))
    candidate, _ = push.push_candidate("pudev-local/dev-image:cu130", "cu130", target)
    assert candidate.digest == digest_of(manifest)
    assert "nothing pushed" in capsys.readouterr().err
