"""`pudev test REGISTRY/REPO@sha256:...`: a candidate's test, and its result kept in the registry.

The candidate is pulled by digest (for an index, its child for one platform), the suite runs in it
(testing/suite_run.py; or, with --reuse-local-pass, a pass this machine already ran on the same
image id stands for it), and each scope's outcome is recorded against that digest as an OCI
artifact whose subject is the digest, so the job that tests and the job that promotes share
nothing but the registry: `pudev promote` reads the results back (`results`)."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.common.halves import SUITE_HALVES
from pudev.common.platforms import native_platform
from pudev.engine import docker, images
from pudev.registry.client import RegistryClient
from pudev.release import artifacts
from pudev.release.image_labels import release_labels
from pudev.release.push import candidate_tag
from pudev.release.tags import read_facts
from pudev.release.targets import CANDIDATE_PULL_HINT, DigestRef, parse_digest_ref
from pudev.testing import localpasses
from pudev.testing.suite_run import SuiteOutcome, run_image_tests

# ---- a result as it is recorded: the scope that ran, its outcome, the facts read inside the image ----

TEST_RESULT_TYPE = "application/vnd.pudev.test-result.v1+json"


@dataclass(frozen=True)
class SuiteResult:
    digest: str  # the manifest the test pulled and ran
    half: str  # cpu, gpu or platform
    passed: bool
    variant: str
    candidate_tag: str  # the tag the candidate had when it was tested ("" when unknown)
    facts: dict[str, str] = field(default_factory=dict)  # torch, cuda, python, revision, created
    counts: dict[str, int] = field(default_factory=dict)  # passed, failed, skipped
    tested_at: str = ""


def stamped(result: SuiteResult) -> SuiteResult:
    """The result with its time: now, unless it already has one."""
    if result.tested_at:
        return result
    return SuiteResult(**{**asdict(result), "tested_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


def result_payload(result: SuiteResult) -> bytes:
    return json.dumps(asdict(result), sort_keys=True).encode()


def result_annotations(result: SuiteResult) -> dict[str, str]:
    """What a registry's referrers listing shows without fetching the payload."""
    return {"org.pudev.test.half": result.half, "org.pudev.test.outcome": "passed" if result.passed else "failed",
            "org.opencontainers.image.created": result.tested_at}


def parse_result(payload: bytes, *, where: str) -> SuiteResult:
    """A recorded payload back as a result; `where` names the artifact for the error."""
    known = {item.name for item in fields(SuiteResult)}
    try:
        data = json.loads(payload)
        return SuiteResult(**{key: value for key, value in data.items() if key in known})
    except (ValueError, TypeError, AttributeError):
        raise PudevError(f"{where}: a test result pudev cannot read; record the test again with "
                         "`pudev test` of this pudev") from None


# ---- the run ----

@dataclass(frozen=True)
class CandidateImage:
    """The pulled candidate as the engine has it, and what its record needs from its registry and labels."""

    reference: str  # REGISTRY/REPO@sha256:..., present locally
    image_id: str
    digest: str  # the manifest tested
    variant: str  # from the image's own label
    candidate_tag: str  # the tag `pudev push` gave it, where it still points here ("" otherwise)
    facts: dict[str, str]  # torch, cuda, python, revision, created, as read from the image


def scopes_of(half: str) -> tuple[str, ...]:
    """What a run of `half` (all, cpu, gpu or platform) proves, scope by scope."""
    return SUITE_HALVES if half == "all" else (half,)


def _passed_here(image_id: str, halves: tuple[str, ...]) -> dict[str, dict[str, int]] | None:
    """Each half's counts from a pass this machine already ran on the same image id, or None."""
    passes = {name: localpasses.recall(image_id, name) for name in halves}
    found = {name: found.counts for name, found in passes.items() if found is not None}
    if len(found) != len(halves):
        return None
    when = ", ".join(f"{name} at {found.tested_at}" for name, found in passes.items() if found is not None)
    print(f"pudev: image {image_id[:19]} already passed here ({when}); recording that instead of running it again",
          flush=True)
    return found


def run_candidate(image: CandidateImage, *, half: str, timeout: float, junit: Path | None, pytest_args: list[str],
                  reuse_local_pass: bool) -> SuiteOutcome:
    reused = _passed_here(image.image_id, scopes_of(half)) if reuse_local_pass and not pytest_args else None
    if reused is not None:
        return SuiteOutcome(code=0, gpus=False, counts=reused)
    return run_image_tests(image.reference, timeout=timeout, half=half, junit=junit, pytest_args=pytest_args)


def results_to_record(image: CandidateImage, outcome: SuiteOutcome, *, half: str) -> list[SuiteResult]:
    """One result per scope the run proves; a GPU half that found no GPU to run on proves nothing either way."""
    found = []
    for name in scopes_of(half):
        counts = outcome.counts.get(name, {})
        if name == "gpu" and half == "all" and counts.get("passed", 0) == 0:
            print("pudev: no GPU test ran here, so no GPU result is recorded", file=sys.stderr, flush=True)
            continue
        found.append(SuiteResult(digest=image.digest, half=name, passed=outcome.code == 0 and outcome.half_passed(name),
                                 variant=image.variant, candidate_tag=image.candidate_tag, facts=dict(image.facts),
                                 counts=counts))
    return found


# ---- the result in the registry, beside the candidate ----

def record(client: RegistryClient, candidate: DigestRef, result: SuiteResult) -> str:
    """Attach `result` to the candidate's digest; returns the artifact's digest."""
    if result.digest != candidate.digest:
        raise PudevError(f"a result for {result.digest[:19]} cannot be recorded against {candidate.digest[:19]}")
    result = stamped(result)
    return artifacts.attach(client, candidate.target.repository, candidate.digest,
                            artifact_type=TEST_RESULT_TYPE,
                            payload=result_payload(result),
                            annotations=result_annotations(result))


def results(client: RegistryClient, candidate: DigestRef) -> list[SuiteResult]:
    """Every recorded result for the candidate's digest, oldest first; a record about another
    digest (a copied or forged one) is not a result for this one."""
    found = []
    for artifact in artifacts.referrers(client, candidate.target.repository, candidate.digest,
                                          TEST_RESULT_TYPE):
        payload = artifacts.payload(client, candidate.target.repository, artifact)
        result = parse_result(payload, where=candidate.target.by_digest(artifact.digest))
        if result.digest == candidate.digest:
            found.append(result)
    return sorted(found, key=lambda item: item.tested_at)


# ---- the command ----

def _tag_of(client: RegistryClient, candidate: DigestRef, variant: str, image_id: str) -> str:
    """The candidate tag `pudev push` gave this image, if it still points here (promote re-checks it)."""
    tag = candidate_tag(variant, image_id)
    return tag if client.digest(candidate.target.repository, tag) == candidate.digest else ""


def platform_child(client: RegistryClient, candidate: DigestRef, platform: str) -> DigestRef:
    """The image to test: the reference itself, or for an index its child for `platform` (else this host's)."""
    body, _ = client.manifest(candidate.target.repository, candidate.digest)
    entries = json.loads(body).get("manifests")
    if not isinstance(entries, list):
        return candidate
    wanted = platform or native_platform()
    found = {f"{entry.get('platform', {}).get('os')}/{entry.get('platform', {}).get('architecture')}": entry["digest"]
             for entry in entries if entry.get("platform")}
    if wanted not in found:
        raise PudevError(f"{candidate} is an index without a {wanted} image (it holds {', '.join(found) or 'none'}): "
                         "pass --platform with one of those")
    print(f"pudev: {candidate} is an index; testing its {wanted} image", file=sys.stderr, flush=True)
    return DigestRef(candidate.target, found[wanted])


def _pulled(client: RegistryClient, candidate: DigestRef) -> CandidateImage:
    """The candidate pulled here, with what its results record: its variant from its own label, its facts."""
    reference = str(candidate)
    docker.ensure_local(reference, hint=CANDIDATE_PULL_HINT)
    info = images.require_image(reference)
    labels = release_labels(images.labels_of(info), image=reference)
    facts = read_facts(reference)
    image_id = str(info["Id"])
    return CandidateImage(reference=reference, image_id=image_id, digest=candidate.digest, variant=labels.variant,
                          candidate_tag=_tag_of(client, candidate, labels.variant, image_id),
                          facts=dataclasses.asdict(facts))


def _test_one(candidate: DigestRef, *, half: str, timeout: float, junit: Path | None, pytest_args: list[str],
              reuse_local_pass: bool, platform: str) -> int:
    client = RegistryClient(candidate.target.api)
    client.ping()
    candidate = platform_child(client, candidate, platform)
    image = _pulled(client, candidate)
    outcome = run_candidate(image, half=half, timeout=timeout, junit=junit, pytest_args=pytest_args,
                            reuse_local_pass=reuse_local_pass)
    if pytest_args:
        print("pudev: a run with pytest arguments is not recorded", file=sys.stderr, flush=True)
        return outcome.code
    for result in results_to_record(image, outcome, half=half):
        record(client, candidate, result)
        print(f"pudev: recorded {result.half} {'pass' if result.passed else 'FAILURE'} for {image.reference}",
              flush=True)
    return outcome.code


def run_candidate_tests(references: Sequence[str], *, half: str, timeout: float, junit: Path | None,
                        pytest_args: list[str], reuse_local_pass: bool = False, platform: str = "") -> int:
    """Every reference is checked before the engine is asked, and the engine before any registry."""
    candidates = [parse_digest_ref(text, flag="pudev test") for text in references]
    docker.require_daemon()
    for candidate in candidates:
        code = _test_one(candidate, half=half, timeout=timeout, junit=junit, pytest_args=pytest_args,
                         reuse_local_pass=reuse_local_pass, platform=platform)
        if code != 0:
            return code
    return 0
