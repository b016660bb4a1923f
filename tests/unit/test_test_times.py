"""The test-time report (tools/times_report.py) and its committed copy: the docs' table is rendered
from benchmarks/test-times.json, and the report says where the suite stands against the proof's budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from docs_tables import REPORT
from docs_tables import test_times_markdown as markdown
from times_report import BUDGET_S, SLOWEST, TestTime, engine, summarize

from pudev.paths import REPO_ROOT

COMMITTED = REPO_ROOT / REPORT
MACHINE = {"cpus": 2, "memory_gib": 23.5, "cpu_model": "x", "kernel": "6", "python": "3.11"}


def _times(count: int) -> list[TestTime]:
    return [TestTime(f"tests/{'e2e' if n % 3 else 'unit'}/test_{n % 5}.py::test_{n}", float(n), "passed")
            for n in range(count)]


def test_the_report_has_the_slowest_tests_the_files_and_the_wall_time() -> None:
    times = [*_times(30), TestTime("tests/unit/test_0.py::test_x", 0.5, "failed")]
    report = summarize(times, total_s=1234.56, description=MACHINE, when=0)
    assert report["total_s"] == 1234.6 and report["budget_s"] == BUDGET_S == 1800
    assert report["tests"] == 31 and report["outcomes"] == {"passed": 30, "failed": 1}
    assert [row["seconds"] for row in report["slowest"]] == [float(n) for n in range(29, 29 - SLOWEST, -1)]
    assert sum(row["tests"] for row in report["files"]) == 31
    assert round(sum(row["seconds"] for row in report["files"]), 1) == round(sum(range(30)) + 0.5, 1)
    assert [row["seconds"] for row in report["files"]] == sorted((row["seconds"] for row in report["files"]),
                                                                 reverse=True)
    assert report["machine"] == MACHINE and report["date"] == "1970-01-01"
    assert report["durations"] == {item.nodeid: item.seconds for item in times}  # every test, not only the slowest


def test_the_table_states_the_budget_and_groups_the_small_files() -> None:
    times = [TestTime("tests/e2e/test_big.py::a", 300.0, "passed"), TestTime("tests/unit/test_a.py::b", 2.0, "passed"),
             TestTime("tests/unit/test_b.py::c", 3.0, "passed")]
    text = markdown(summarize(times, total_s=900, description=MACHINE, when=0))
    assert "3 tests (3 passed) in **15 min 00 s**, 50% of the 30 min 00 s budget for `.ci/run`" in text
    assert "| `tests/e2e/test_big.py` | 1 | 300 |" in text and "| 2 other files | 2 | 5 |" in text


def test_the_committed_report_is_a_full_run_inside_the_budget() -> None:
    """A full run's report (its outcomes are in it, and in the docs' line, for a reader to judge)."""
    report = json.loads(COMMITTED.read_text())
    assert sum(report["outcomes"].values()) == report["tests"] > 400 and len(report["slowest"]) == SLOWEST
    assert {row["file"].split("/")[1] for row in report["files"]} >= {"lint", "unit", "e2e"}
    assert report["total_s"] <= report["budget_s"], "the committed run is over the proof's budget"


@pytest.mark.parametrize(("status", "store"), [
    ([["driver-type", "io.containerd.snapshotter.v1"]], "containerd"),
    ([["Backing Filesystem", "extfs"], ["Supports d_type", "true"]], "graph driver"),
])
def test_the_report_names_the_engine_and_its_image_store(status: list[list[str]], store: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """What `docker info` says of the engine the run used (its JSON as 28.5 and 20.10 print it), into the docs' line."""
    info = {"ServerVersion": "28.5.2", "Driver": "overlayfs", "DriverStatus": status}
    client = tmp_path / "docker"
    client.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(info)}\nEOF\n")
    client.chmod(0o755)
    monkeypatch.setenv("PUDEV_DOCKER", str(client))  # the client pudev (and the e2e tests) use
    found = engine()
    assert found == {"server": "28.5.2", "storage_driver": "overlayfs", "image_store": store}
    text = markdown(summarize(_times(3), total_s=60, description={**MACHINE, "engine": found}, when=0))
    assert f"23.5 GiB, Docker 28.5.2 (overlayfs, {store} image store) (" in text


def test_without_an_engine_the_report_says_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client = tmp_path / "docker"
    client.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    client.chmod(0o755)
    monkeypatch.setenv("PUDEV_DOCKER", str(client))  # the client pudev (and the e2e tests) use
    assert engine() == {}
    assert "23.5 GiB (" in markdown(summarize(_times(3), total_s=60, description={**MACHINE, "engine": {}}, when=0))
