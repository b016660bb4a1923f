"""The reviewed exceptions to the vulnerability gate: each has a reason, a mitigation, an expiry
date that has not passed and is at most a year away, and names the exact packages it covers."""

from __future__ import annotations

import datetime
from pathlib import Path

from ruamel.yaml import YAML

from pudev.config.loader import load_matrix
from pudev.paths import VARIANTS_FILE
from pudev.policy.trivyignore import IGNORE_FILE, problems

GOOD = "    statement: reachable only from gdb\n    mitigation: do not run gdb on untrusted cores\n"
SCOPED = "    purls: [pkg:pypi/torch@2.5.1]\n"


def test_the_repositorys_ignore_file_is_reviewed() -> None:
    assert IGNORE_FILE.is_file()
    assert problems() == []


def test_an_entry_without_reason_mitigation_date_or_past_its_date_fails(tmp_path: Path) -> None:
    path = tmp_path / ".trivyignore.yaml"
    path.write_text("vulnerabilities:\n"
                    f"  - id: CVE-2026-1\n{GOOD}{SCOPED}    expired_at: 2027-03-01\n"
                    f"  - id: CVE-2026-2\n    mitigation: m\n{SCOPED}    expired_at: 2027-03-01\n"
                    f"  - id: CVE-2026-3\n{GOOD}{SCOPED}"
                    f"  - id: CVE-2026-4\n{GOOD}{SCOPED}    expired_at: 2026-11-01\n"
                    f"  - id: CVE-2026-5\n{GOOD}{SCOPED}    expires: 2027-03-01\n"
                    f"  - id: CVE-2026-6\n    statement: fine\n{SCOPED}    expired_at: 2027-03-01\n"
                    f"  - id: CVE-2026-7\n{GOOD}{SCOPED}    expired_at: 2028-01-01\n")
    found = problems(path, today=datetime.date(2026, 11, 30))
    assert found == [
        "vulnerabilities[1] CVE-2026-2: no statement saying why it is acceptable",
        "vulnerabilities[2] CVE-2026-3: no expired_at date (YYYY-MM-DD); Trivy would ignore it forever",
        "vulnerabilities[3] CVE-2026-4: expired on 2026-11-01; review it and set a new date, or drop it",
        "vulnerabilities[4] CVE-2026-5: no expired_at date (YYYY-MM-DD); Trivy would ignore it forever",
        "vulnerabilities[5] CVE-2026-6: no mitigation saying what users must do until it is fixed",
        "vulnerabilities[6] CVE-2026-7: expired_at 2028-01-01 is more than a year away; review it within a year",
    ]


def test_a_vulnerability_exception_names_exact_packages(tmp_path: Path) -> None:
    path = tmp_path / ".trivyignore.yaml"
    path.write_text("vulnerabilities:\n"
                    f"  - id: CVE-2026-1\n{GOOD}    expired_at: 2027-03-01\n"
                    f"  - id: CVE-2026-2\n{GOOD}    purls: [pkg:pypi/torch]\n    expired_at: 2027-03-01\n"
                    f"  - id: CVE-2026-3\n{GOOD}    purls: ['pkg:pypi/torch@2.5.1%2Bcu121',\n"
                    "             'pkg:deb/ubuntu/libc6@2.35-0ubuntu3.8?arch=amd64']\n    expired_at: 2027-03-01\n")
    assert problems(path, today=datetime.date(2026, 11, 30)) == [
        "vulnerabilities[0] CVE-2026-1: no purls; name the exact packages it covers (pkg:pypi/NAME@VERSION), or it "
        "silences the finding in every package",
        "vulnerabilities[1] CVE-2026-2: purl 'pkg:pypi/torch' is not pkg:TYPE/NAME@VERSION",
    ]


def _torch_exceptions() -> dict[str, list[str]]:
    data = YAML(typ="safe").load(IGNORE_FILE.read_text())
    return {entry["id"]: entry["purls"] for entry in data["vulnerabilities"]}


def test_the_2024_lines_torch_findings_are_excepted_for_its_torch_alone() -> None:
    """The policy in docs/publishing/vulnerability-gate.md: the two named torch CVEs are excepted for one
    torch, the 2024 line's (each +cuXYZ build the matrix ships of it, and the bare version), never for the
    default variant's torch (the newest line) or any other package. Which variants ship which torch comes from
    the matrix."""
    exceptions = _torch_exceptions()
    cves = ("CVE-2025-32434", "CVE-2026-24747")
    assert set(cves) <= set(exceptions)
    (excepted,) = {purl.removeprefix("pkg:pypi/torch@").split("%2B")[0] for cve in cves for purl in exceptions[cve]}
    matrix = load_matrix(VARIANTS_FILE)
    assert excepted != matrix.get(matrix.default_variant).torch, "the newest line gets no exception"
    line = [variant for variant in matrix.variants.values() if variant.torch == excepted]
    assert line, f"no variant ships torch {excepted} any more: drop its exceptions"
    allowed = {f"pkg:pypi/torch@{excepted}"} | {f"pkg:pypi/torch@{excepted}%2B{variant.cuda_tag}" for variant in line}
    for cve in cves:
        assert set(exceptions[cve]) == allowed, cve
    for cve, purls in exceptions.items():
        if any(purl.startswith("pkg:pypi/torch@") for purl in purls):
            assert set(purls) <= allowed, f"{cve} must not cover another torch than {excepted}"


def test_the_docs_state_the_policy_and_each_exception() -> None:
    page = (IGNORE_FILE.parent / "docs" / "publishing" / "vulnerability-gate.md").read_text()
    for cve in _torch_exceptions():
        assert cve in page, f"docs/publishing/vulnerability-gate.md must list the exception {cve}"
    assert "safetensors" in page and "torch.load" in page  # the mitigation users must apply
