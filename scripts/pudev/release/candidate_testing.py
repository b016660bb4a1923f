"""`pudev test REGISTRY/REPO@sha256:...`: pull a candidate by digest (for an index, its child
for one platform), run the suite in it (testing/candidate_run.py), and record each half's
outcome against that digest in the registry, where `pudev promote` looks for it."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.common.platforms import native_platform
from pudev.engine import docker, images
from pudev.registry.client import RegistryClient
from pudev.release.candidates import candidate_tag
from pudev.release.image_labels import release_labels
from pudev.release.result_artifacts import record
from pudev.release.tags import read_facts
from pudev.release.targets import CANDIDATE_PULL_HINT, DigestRef, parse_digest_ref
from pudev.testing.candidate_run import CandidateImage, results_to_record, run_candidate


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
