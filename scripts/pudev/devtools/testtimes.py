"""Where the full test run spends its time, as data: each test's duration (setup, call and teardown
together), summed per file, the slowest tests, and the run's wall time against the proof's budget.
tests/conftest.py writes it after every run given `--times-report PATH` (`make test` does); a warm
run's report is committed as benchmarks/test-times.json, and the table in docs/maintaining/proof-costs.md
is rendered from it (pudev/devtools/docs_tables.py renders it with every other generated table)."""

from __future__ import annotations

import json
import os
import platform
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from pudev.common.generated import markers, replace_block
from pudev.common.table import markdown_table

# `.ci/run` must stay well inside CI's hard 90 minutes: a third of it.
BUDGET_S = 30 * 60
SLOWEST = 20
MARKERS = markers("test-times")


@dataclass(frozen=True)
class TestTime:
    __test__ = False  # a record, not a pytest class
    nodeid: str
    seconds: float
    outcome: str  # passed, failed, skipped, error


def machine() -> dict[str, Any]:
    """What the numbers were measured on: enough to tell two machines apart, no host name or path."""
    memory = 0
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            memory = next(int(line.split()[1]) * 1024 for line in info if line.startswith("MemTotal:"))
    except (OSError, StopIteration, ValueError):
        pass
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        pass
    return {"cpus": os.cpu_count() or 0, "memory_gib": round(memory / 1024**3, 1), "cpu_model": model,
            "kernel": platform.release(), "python": platform.python_version()}


def summarize(times: list[TestTime], *, total_s: float, description: dict[str, Any], when: float) -> dict[str, Any]:
    files: dict[str, list[TestTime]] = defaultdict(list)
    for item in times:
        files[item.nodeid.split("::", 1)[0]].append(item)
    totals = sorted(((round(sum(t.seconds for t in items), 1), name, len(items)) for name, items in files.items()),
                    key=lambda row: (-row[0], row[1]))
    per_file = [{"file": name, "seconds": seconds, "tests": count} for seconds, name, count in totals]
    slowest = sorted(times, key=lambda item: -item.seconds)[:SLOWEST]
    outcomes: dict[str, int] = defaultdict(int)
    for item in times:
        outcomes[item.outcome] += 1
    return {"date": time.strftime("%Y-%m-%d", time.gmtime(when)), "machine": description,
            "total_s": round(total_s, 1), "budget_s": BUDGET_S, "tests": len(times), "outcomes": dict(outcomes),
            "slowest": [{"test": item.nodeid, "seconds": round(item.seconds, 1)} for item in slowest],
            "files": per_file, "durations": {item.nodeid: round(item.seconds, 2) for item in times}}


def _minutes(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s"


def markdown(report: dict[str, Any]) -> str:
    """The docs' test-time table: the run against the budget, then the files that cost a minute or more."""
    total, budget, box = float(report["total_s"]), float(report["budget_s"]), report["machine"]
    outcomes = ", ".join(f"{count} {name}" for name, count in sorted(report["outcomes"].items()))
    lines = [f"Measured {report['date']} on {box['cpus']} CPUs and {box['memory_gib']} GiB "
             f"(`benchmarks/test-times.json`): {report['tests']} tests ({outcomes}) in **{_minutes(total)}**, "
             f"{100 * total / budget:.0f}% of the {_minutes(budget)} budget for `.ci/run`.",
             ""]
    heavy = [row for row in report["files"] if row["seconds"] >= 60]
    rows = [[f"`{row['file']}`", row["tests"], f"{row['seconds']:.0f}"] for row in heavy]
    rest = [row for row in report["files"] if row["seconds"] < 60]
    if rest:
        rest_seconds = sum(row["seconds"] for row in rest)
        rows.append([f"{len(rest)} other files", sum(row["tests"] for row in rest), f"{rest_seconds:.0f}"])
    return "\n".join([*lines, markdown_table(["file", "tests", "seconds"], rows)])


def with_times(text: str, report: dict[str, Any]) -> str:
    """The text with its generated test-time table replaced (unchanged without the markers)."""
    return replace_block(text, MARKERS, markdown(report))


# The docs page that holds the table, and the committed report it is rendered from.
PAGE = "docs/maintaining/proof-costs.md"
REPORT = "benchmarks/test-times.json"


def refresh_docs(report_file: str = REPORT, page_file: str = PAGE) -> None:
    """`python -m pudev.devtools.testtimes`: render the docs' table from the committed report."""
    from pudev.paths import REPO_ROOT

    page = REPO_ROOT / page_file
    page.write_text(with_times(page.read_text(), json.loads((REPO_ROOT / report_file).read_text())))


if __name__ == "__main__":
    refresh_docs()
