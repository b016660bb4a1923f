"""pudev.image.pip_conflict: pip's resolver report, when the image's torch lock refused a package, becomes one
line naming the lock and what to do; any other report passes as pip wrote it."""

from __future__ import annotations

import io
import logging

import pytest

from pudev.image import pip_conflict

LOCK = "/etc/pudev/torch-constraints.txt"
# pip 23 to 25's report (pip/_internal/resolution/resolvelib/factory.py), as logged at INFO.
TORCH_REPORT = """
The conflict is caused by:
    wants-old-torch 0.1 depends on torch==2.0.0
    The user requested (constraint) torch==2.5.1

To fix this you could try to:
1. loosen the range of package versions you've specified
2. remove package versions to allow pip attempt to solve the dependency conflict
"""
OTHER_REPORT = """
The conflict is caused by:
    a 1.0 depends on six==1.0
    b 2.0 depends on six==2.0
"""


def test_the_torch_lock_report_becomes_one_line_naming_the_lock_and_the_fix() -> None:
    line = pip_conflict.one_line(TORCH_REPORT, LOCK)
    assert line is not None and "\n" not in line
    assert "wants-old-torch 0.1 wants torch==2.0.0" in line and "keeps torch==2.5.1" in line
    assert LOCK in line and "install a release of wants-old-torch that accepts torch==2.5.1" in line


@pytest.mark.parametrize("report", [OTHER_REPORT, TORCH_REPORT.replace("(constraint) torch", "(constraint) numpy"),
                                    TORCH_REPORT.replace("depends on torch", "depends on numpy")])
def test_any_other_conflict_keeps_pips_own_report(report: str) -> None:
    assert pip_conflict.one_line(report, LOCK) is None


def test_the_filter_rewrites_pips_report_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    logger = logging.getLogger(pip_conflict.REPORT_LOGGER)
    monkeypatch.setattr(logger, "filters", [])
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    monkeypatch.setattr(logger, "handlers", [handler])
    monkeypatch.setattr(logger, "level", logging.INFO)
    pip_conflict.install({"PIP_CONSTRAINT": LOCK})
    logger.critical("Cannot install %s because these package versions have conflicting dependencies.", "x")
    logger.info(TORCH_REPORT)
    logger.info(OTHER_REPORT)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Cannot install x")  # pip's first line stays
    assert lines[1].startswith("pudev: wants-old-torch 0.1 wants torch==2.0.0")
    assert "loosen the range" not in out.getvalue() and "a 1.0 depends on six==1.0" in out.getvalue()


def test_without_the_lock_nothing_is_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    logger = logging.getLogger(pip_conflict.REPORT_LOGGER)
    monkeypatch.setattr(logger, "filters", [])
    pip_conflict.install({})
    assert logger.filters == []
