"""Test results recorded against a candidate's digest, in the registry beside it (an
OCI artifact whose subject is that digest), so the job that tests and the job that
promotes need share nothing but the registry. A result holds the half that ran
(cpu or gpu), its outcome, and the facts the test read inside the image."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field

from pudev.common.errors import PudevError
from pudev.registry.client import RegistryClient
from pudev.release import artifacts
from pudev.release.targets import DigestRef
from pudev.testing.testrun import HALVES

__all__ = ["HALVES", "TEST_RESULT_TYPE", "SuiteResult", "record", "results"]

TEST_RESULT_TYPE = "application/vnd.pudev.test-result.v1+json"


@dataclass(frozen=True)
class SuiteResult:
    digest: str  # the manifest the test pulled and ran
    half: str  # cpu or gpu
    passed: bool
    variant: str
    candidate_tag: str  # the tag the candidate had when it was tested ("" when unknown)
    facts: dict[str, str] = field(default_factory=dict)  # torch, cuda, python, revision, created
    counts: dict[str, int] = field(default_factory=dict)  # passed, failed, skipped
    tested_at: str = ""


def record(client: RegistryClient, candidate: DigestRef, result: SuiteResult) -> str:
    if result.digest != candidate.digest:
        raise PudevError(f"a result for {result.digest[:19]} cannot be recorded against {candidate.digest[:19]}")
    stamped = result if result.tested_at else SuiteResult(**{**asdict(result), "tested_at": _now()})
    payload = json.dumps(asdict(stamped), sort_keys=True).encode()
    annotations = {"org.pudev.test.half": stamped.half, "org.pudev.test.outcome": "passed" if stamped.passed
                   else "failed", "org.opencontainers.image.created": stamped.tested_at}
    return artifacts.attach(client, candidate.target.repository, candidate.digest, artifact_type=TEST_RESULT_TYPE,
                            payload=payload, annotations=annotations)


def results(client: RegistryClient, candidate: DigestRef) -> list[SuiteResult]:
    """Every recorded result for the candidate's digest, oldest first; a record about another
    digest (a copied or forged one) is not a result for this one."""
    found = []
    for artifact in artifacts.referrers(client, candidate.target.repository, candidate.digest, TEST_RESULT_TYPE):
        data = json.loads(artifacts.payload(client, candidate.target.repository, artifact))
        result = SuiteResult(**data)
        if result.digest == candidate.digest:
            found.append(result)
    return sorted(found, key=lambda item: item.tested_at)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
