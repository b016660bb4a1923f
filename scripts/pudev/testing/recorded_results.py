"""A test result as it is recorded against a candidate's digest: the scope that ran (cpu,
gpu or the platform proof), its outcome, and the facts the test read inside the image, in
the JSON form `pudev test REF` records and `pudev promote` reads back. Where the record is
kept (an OCI artifact on the digest) is release/result_artifacts.py's concern."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields

from pudev.common.errors import PudevError

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
