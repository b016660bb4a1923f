"""The test-time report (tools/times_report.py) and the docs' proof-cost tables (tools/docs_tables.py), rendered
from each shard's report and the fresh machine's runs committed under benchmarks/shards/. The budgets are shown
beside the figures, never asserted here: a speed or disk goal lives in benchmarks/ and the docs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from docs_tables import FRESH_RUN, RUN_BUDGETS, SHARD_REPORTS, shard_reports
from docs_tables import test_times_markdown as markdown
from shards import SHARDS
from times_report import SLOWEST, TestTime, engine, summarize

from pudev.paths import REPO_ROOT

COMMITTED = REPO_ROOT / SHARD_REPORTS
MACHINE = {"cpus": 2, "memory_gib": 23.5, "cpu_model": "x", "kernel": "6", "python": "3.11"}
ENGINE = {"server": "28.5.2", "storage_driver": "overlayfs", "image_store": "containerd"}
DISK_FIELDS = {"free_at_start_gb", "lowest_free_gb", "peak_above_start_gb", "samples"}


def _times(count: int) -> list[TestTime]:
    return [TestTime(f"tests/{'e2e' if n % 3 else 'unit'}/test_{n % 5}.py::test_{n}", float(n), "passed")
            for n in range(count)]


def _shard_report(shard: str, times: list[TestTime], *, total_s: float, peak_gb: float,
                  machine: dict[str, Any]) -> dict[str, Any]:
    """A report as TimesRecorder writes it for one shard."""
    report = summarize(times, total_s=total_s, description=machine, when=0)
    return {"shard": shard, **report, "disk": {"free_at_start_gb": 80.0, "lowest_free_gb": round(80.0 - peak_gb, 1),
                                               "peak_above_start_gb": peak_gb, "samples": 12}}


def _write(folder: Path, *, ci_seconds: float = 3000.0, ci_peak_gb: float = 41.0,
           engine_found: dict[str, str] | None = None) -> Path:
    """Every shard's report and fresh-run.json in `folder`: each shard has one file, `tests/e2e/test_SHARD.py`,
    of 90 s (heavy) and one light file; the newest shard names the engine."""
    for index, shard in enumerate(SHARDS):
        machine = {**MACHINE, "engine": ENGINE if engine_found is None else engine_found} if index == 0 else MACHINE
        times = [TestTime(f"tests/e2e/test_{shard}.py::a", 90.0, "passed"),
                 TestTime(f"tests/unit/test_light_{shard}.py::b", 2.0, "skipped" if index else "passed")]
        report = _shard_report(shard, times, total_s=600.0 + index, peak_gb=10.0 + index, machine=machine)
        (folder / f"{shard}.json").write_text(json.dumps(report))
    fresh = {"date": "2026-12-07", "machine": MACHINE, "free_at_start_gb": 78.9,
             "runs": [{"name": "the README's two commands", "commands": ["make build-local", "make test"],
                       "seconds": 1800.0, "peak_above_start_gb": 30.1, "lowest_free_gb": 48.8},
                      {"name": ".ci/run", "commands": ["make test-all"], "seconds": ci_seconds,
                       "peak_above_start_gb": ci_peak_gb, "lowest_free_gb": 37.9}],
             "steps": [{"command": "make build-local", "seconds": 600.0}, {"command": "make test", "seconds": 1200.0}]}
    (folder / FRESH_RUN).write_text(json.dumps(fresh))
    return folder


def _row(text: str, first_cell: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith(f"| {first_cell} |")]
    return line


def test_the_report_has_the_slowest_tests_the_files_and_the_wall_time() -> None:
    times = [*_times(30), TestTime("tests/unit/test_0.py::test_x", 0.5, "failed")]
    report = summarize(times, total_s=1234.56, description=MACHINE, when=0)
    assert report["total_s"] == 1234.6 and "budget_s" not in report  # a shard has no budget of its own
    assert report["tests"] == 31 and report["outcomes"] == {"passed": 30, "failed": 1}
    assert [row["seconds"] for row in report["slowest"]] == [float(n) for n in range(29, 29 - SLOWEST, -1)]
    assert sum(row["tests"] for row in report["files"]) == 31
    assert round(sum(row["seconds"] for row in report["files"]), 1) == round(sum(range(30)) + 0.5, 1)
    assert [row["seconds"] for row in report["files"]] == sorted((row["seconds"] for row in report["files"]),
                                                                 reverse=True)
    assert report["machine"] == MACHINE and report["date"] == "1970-01-01"
    assert report["durations"] == {item.nodeid: item.seconds for item in times}  # every test, not only the slowest


def test_the_runs_are_shown_against_their_budgets_and_a_figure_over_is_marked(tmp_path: Path) -> None:
    minutes, gigabytes = RUN_BUDGETS[".ci/run"]
    assert gigabytes is not None  # .ci/run on a fresh machine has a disk budget
    text = markdown(_write(tmp_path, ci_seconds=minutes * 60 + 1, ci_peak_gb=gigabytes - 1))
    readme = _row(text, "the README's two commands")
    assert "30 min 00 s (75%)" in readme and "30.1 GB (75%)" in readme and "48.8 GB" in readme
    assert "over" not in readme
    ci = _row(text, ".ci/run")
    assert f"{minutes} min 01 s (100%, **over**)" in ci  # the wall time, one second over
    assert f"{gigabytes - 1:.1f} GB (" in ci and ci.count("over") == 1  # the disk, under its budget
    over_disk = _row(markdown(_write(tmp_path, ci_peak_gb=gigabytes + 0.5)), ".ci/run")
    assert f"{gigabytes + 0.5:.1f} GB (101%, **over**)" in over_disk and over_disk.count("over") == 1
    assert "`make build-local` 10 min 00 s; `make test` 20 min 00 s" in text


def test_a_run_without_a_budget_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path)
    fresh = json.loads((tmp_path / FRESH_RUN).read_text())
    fresh["runs"][0]["name"] = "something else"
    (tmp_path / FRESH_RUN).write_text(json.dumps(fresh))
    with pytest.raises(ValueError, match="no budget for the run 'something else'"):
        markdown(tmp_path)


def test_each_shard_has_a_row_in_order_and_its_heavy_files_name_it(tmp_path: Path) -> None:
    text = markdown(_write(tmp_path))
    rows = [line for line in text.splitlines() if line.startswith("| `") and line.split("|")[1].strip().strip("`")
            in SHARDS]
    assert [row.split("|")[1].strip() for row in rows] == [f"`{shard}`" for shard in SHARDS]
    assert rows[0] == f"| `{SHARDS[0]}` | 2 | 2 passed | 10 min 00 s | 10.0 GB |"
    assert rows[1] == f"| `{SHARDS[1]}` | 2 | 1 passed, 1 skipped | 10 min 01 s | 11.0 GB |"
    for shard in SHARDS:
        assert f"| `tests/e2e/test_{shard}.py` | `{shard}` | 1 | 90 |" in text
        assert f"test_light_{shard}.py" not in text  # under a minute: counted among the others
    others = ", ".join(f"`{shard}`" for shard in SHARDS)
    assert f"| {len(SHARDS)} other files | {others} | {len(SHARDS)} | {2 * len(SHARDS)} |" in text


def test_a_shard_not_measured_yet_says_so_and_no_run_says_none(tmp_path: Path) -> None:
    (_write(tmp_path) / f"{SHARDS[-1]}.json").unlink()
    assert f"| `{SHARDS[-1]}` |  | not measured |  |  |" in markdown(tmp_path)
    assert "No fresh-machine run is recorded yet" in markdown(tmp_path / "missing")


@pytest.mark.parametrize(("status", "store"), [
    ([["driver-type", "io.containerd.snapshotter.v1"]], "containerd"),
    ([["Backing Filesystem", "extfs"], ["Supports d_type", "true"]], "graph driver"),
])
def test_the_report_names_the_engine_and_its_image_store(status: list[list[str]], store: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """What `docker info` says of the engine the run used (its JSON as 28.5 and 20.10 print it), into the docs' line
    (from the newest shard's report)."""
    info = {"ServerVersion": "28.5.2", "Driver": "overlayfs", "DriverStatus": status}
    client = tmp_path / "docker"
    client.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(info)}\nEOF\n")
    client.chmod(0o755)
    monkeypatch.setenv("PUDEV_DOCKER", str(client))  # the client pudev (and the e2e tests) use
    found = engine()
    assert found == {"server": "28.5.2", "storage_driver": "overlayfs", "image_store": store}
    folder = tmp_path / "shards"
    folder.mkdir()
    first = markdown(_write(folder, engine_found=found)).splitlines()[0]
    assert first.startswith("Measured 2026-12-07 on a fresh machine (a new clone, no engine, no images, no caches")
    assert f"2 CPUs and 23.5 GiB, Docker 28.5.2 (overlayfs, {store} image store) (`benchmarks/shards/`)" in first


def test_without_an_engine_the_report_says_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client = tmp_path / "docker"
    client.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    client.chmod(0o755)
    monkeypatch.setenv("PUDEV_DOCKER", str(client))  # the client pudev (and the e2e tests) use
    assert engine() == {}
    folder = tmp_path / "shards"
    folder.mkdir()
    assert "23.5 GiB (`benchmarks/shards/`)" in markdown(_write(folder, engine_found={})).splitlines()[0]


def test_the_committed_reports_are_shards_of_a_fresh_run_with_their_disk() -> None:
    """The fresh machine's run as committed: each measured shard's report with its disk (a shard the run did not
    reach shows as not measured in the docs' table), and the runs the docs show beside their budgets (whether a
    figure is inside its budget is for the docs' table to show, not for a test)."""
    reports = shard_reports(COMMITTED)
    assert SHARDS[0] in reports  # the newest shard, whose report names the engine
    for shard, report in reports.items():
        assert report["shard"] == shard
        assert sum(report["outcomes"].values()) == report["tests"] > 0, shard
        assert len(report["slowest"]) == min(SLOWEST, report["tests"]), shard
        assert set(report["disk"]) >= DISK_FIELDS, f"{shard}: no disk figures"
        assert report["disk"]["samples"] > 0 and report["disk"]["peak_above_start_gb"] >= 0, shard
    assert {row["file"].split("/")[1] for report in reports.values() for row in report["files"]} >= {
        "lint", "unit", "e2e"}
    fresh = json.loads((COMMITTED / FRESH_RUN).read_text())
    assert "the README's two commands" in {run["name"] for run in fresh["runs"]}
    ci_run = next((run for run in fresh["runs"] if run["name"] == ".ci/run"), None)
    if ci_run is not None:  # the commands of .ci/run's last line, each of their shards reported
        last = [line.split() for line in (REPO_ROOT / ".ci/run").read_text().splitlines() if line.strip()][-1]
        targets = last[last.index("make") + 1:]
        assert ci_run["commands"] == [f"make {target}" for target in targets]
        target_of = {"test" if shard == SHARDS[0] else f"test-{shard}": shard for shard in SHARDS}
        assert (set(SHARDS) if targets == ["test-all"] else {target_of[target] for target in targets}) <= set(reports)
    for run in fresh["runs"]:
        assert run["name"] in RUN_BUDGETS and run["commands"], run["name"]
        assert {"seconds", "peak_above_start_gb", "lowest_free_gb"} <= set(run), run["name"]
