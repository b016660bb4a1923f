"""A candidate's test results kept in the registry beside it, as OCI artifacts whose subject
is its digest, so the job that tests and the job that promotes need share nothing but the
registry. `pudev test REF` records them; `pudev promote` reads them back. What a result
holds is testing/recorded_results.py's."""

from __future__ import annotations

from pudev.common.errors import PudevError
from pudev.registry.client import RegistryClient
from pudev.release import artifacts
from pudev.release.targets import DigestRef
from pudev.testing import recorded_results
from pudev.testing.recorded_results import SuiteResult


def record(client: RegistryClient, candidate: DigestRef, result: SuiteResult) -> str:
    """Attach `result` to the candidate's digest; returns the artifact's digest."""
    if result.digest != candidate.digest:
        raise PudevError(f"a result for {result.digest[:19]} cannot be recorded against {candidate.digest[:19]}")
    result = recorded_results.stamped(result)
    return artifacts.attach(client, candidate.target.repository, candidate.digest,
                            artifact_type=recorded_results.TEST_RESULT_TYPE,
                            payload=recorded_results.result_payload(result),
                            annotations=recorded_results.result_annotations(result))


def results(client: RegistryClient, candidate: DigestRef) -> list[SuiteResult]:
    """Every recorded result for the candidate's digest, oldest first; a record about another
    digest (a copied or forged one) is not a result for this one."""
    found = []
    for artifact in artifacts.referrers(client, candidate.target.repository, candidate.digest,
                                          recorded_results.TEST_RESULT_TYPE):
        payload = artifacts.payload(client, candidate.target.repository, artifact)
        result = recorded_results.parse_result(payload, where=candidate.target.by_digest(artifact.digest))
        if result.digest == candidate.digest:
            found.append(result)
    return sorted(found, key=lambda item: item.tested_at)
