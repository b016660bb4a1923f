"""A candidate's run of the suite, and what it proves: the halves it runs (or a pass this
machine already ran on the same image id, with --reuse-local-pass), and the results to
record against the candidate's digest. Pulling the candidate and keeping the results in
its registry is release/candidate_testing.py's part."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from pudev.common.halves import SUITE_HALVES
from pudev.testing import localpasses
from pudev.testing.recorded_results import SuiteResult
from pudev.testing.suite_run import SuiteOutcome, run_image_tests


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
