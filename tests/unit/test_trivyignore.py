"""The reviewed exceptions to the vulnerability gate: each has a reason and an expiry date that has not passed."""

from __future__ import annotations

import datetime
from pathlib import Path

from pudev.release.trivyignore import IGNORE_FILE, problems


def test_the_repositorys_ignore_file_is_reviewed() -> None:
    assert IGNORE_FILE.is_file()
    assert problems() == []


def test_an_entry_without_reason_or_date_or_past_its_date_fails(tmp_path: Path) -> None:
    path = tmp_path / ".trivyignore.yaml"
    path.write_text("vulnerabilities:\n"
                    "  - id: CVE-2026-1\n    statement: reachable only from gdb\n    expired_at: 2027-03-01\n"
                    "  - id: CVE-2026-2\n    expired_at: 2027-03-01\n"
                    "  - id: CVE-2026-3\n    statement: fine\n"
                    "  - id: CVE-2026-4\n    statement: fine\n    expired_at: 2026-11-01\n"
                    "  - id: CVE-2026-5\n    statement: fine\n    expires: 2027-03-01\n")
    found = problems(path, today=datetime.date(2026, 11, 30))
    assert found == [
        "vulnerabilities[1] CVE-2026-2: no statement saying why it is acceptable",
        "vulnerabilities[2] CVE-2026-3: no expired_at date (YYYY-MM-DD); Trivy would ignore it forever",
        "vulnerabilities[3] CVE-2026-4: expired on 2026-11-01; review it and set a new date, or drop it",
        "vulnerabilities[4] CVE-2026-5: no expired_at date (YYYY-MM-DD); Trivy would ignore it forever",
    ]
