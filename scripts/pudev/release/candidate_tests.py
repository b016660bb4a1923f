"""`pudev test REGISTRY/REPO@sha256:...`: pull a candidate by digest, run a half of
the in-image suite in it (or both), and record each half's outcome against that
digest in the registry, where `pudev promote` looks for it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.common.platforms import native_platform
from pudev.engine import docker, images
from pudev.registry.client import RegistryClient
from pudev.release import testresults
from pudev.release.candidates import candidate_tag
from pudev.release.tags import read_facts
from pudev.release.targets import DigestRef
from pudev.release.testresults import SuiteResult
from pudev.testing import localpasses
from pudev.testing.testrun import HALVES, SuiteOutcome, run_image_tests

CANDIDATE_PULL_HINT = "check the reference (what `pudev push` printed) and that you are logged in to its registry"


def _tag_of(client: RegistryClient, candidate: DigestRef, variant: str, image_id: str) -> str:
    """The candidate tag `pudev push` gave this image, if it still points here (promote re-checks it)."""
    tag = candidate_tag(variant, image_id)
    return tag if client.digest(candidate.target.repository, tag) == candidate.digest else ""


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


def run_candidate_tests(candidate: DigestRef, *, half: str, timeout: float, junit: Path | None,
                        pytest_args: list[str], reuse_local_pass: bool = False, platform: str = "") -> int:
    docker.require_daemon()
    client = RegistryClient(candidate.target.api)
    client.ping()
    candidate = platform_child(client, candidate, platform)
    reference = str(candidate)
    docker.ensure_local(reference, hint=CANDIDATE_PULL_HINT)
    info = images.require_image(reference)
    labels = images.labels_of(info)
    variant = labels.get("org.pudev.variant", "")
    if not variant:
        raise PudevError(f"{reference} carries no org.pudev.variant label: it was not built by pudev")
    facts = read_facts(reference)
    halves = HALVES if half == "all" else (half,)
    reused = _passed_here(str(info["Id"]), halves) if reuse_local_pass and not pytest_args else None
    outcome = (SuiteOutcome(code=0, gpus=False, counts=reused) if reused is not None else
               run_image_tests(reference, timeout=timeout, half=half, junit=junit, pytest_args=pytest_args))
    if pytest_args:
        print("pudev: a run with pytest arguments is not recorded", file=sys.stderr, flush=True)
        return outcome.code
    tag = _tag_of(client, candidate, variant, str(info["Id"]))
    for name in halves:
        counts = outcome.counts.get(name, {})
        if name == "gpu" and half == "all" and counts.get("passed", 0) == 0:
            print("pudev: no GPU test ran here, so no GPU result is recorded", file=sys.stderr, flush=True)
            continue
        passed = outcome.code == 0 and outcome.half_passed(name)
        result = SuiteResult(digest=candidate.digest, half=name, passed=passed, variant=variant, candidate_tag=tag,
                            facts={"torch": facts.torch, "cuda": facts.cuda, "python": facts.python,
                                   "revision": facts.revision, "created": facts.created},
                            counts=counts)
        testresults.record(client, candidate, result)
        print(f"pudev: recorded {name} {'pass' if passed else 'FAILURE'} for {reference}", flush=True)
    return outcome.code
