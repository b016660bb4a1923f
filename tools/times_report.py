"""Where a test run spends its time and disk, as data: each test's duration (setup, call and teardown
together), summed per file, the slowest tests, the run's wall time, and the free disk sampled every few
seconds (at the start, at its lowest, and the peak use above the start). tests/conftest.py registers this
recorder given `--times-report PATH` (each shard's make target passes reports/test-times-SHARD.json). A shard
has no budget of its own: the budgets are of whole runs on a fresh machine. That run's reports are committed
as benchmarks/shards/SHARD.json beside benchmarks/shards/fresh-run.json, and tools/docs_tables.py renders the
tables in docs/maintaining/proof-costs.md from them."""

from __future__ import annotations

import json
import os
import platform
import shutil
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SLOWEST = 20


# The engine's data root when it is on this host (its disk is the one a run fills), else the working folder's.
ENGINE_ROOT = Path("/var/lib/docker")
SAMPLE_EVERY_S = 5.0
GB = 1e9


class DiskSampler:
    """The free space of the disk a run fills, sampled in a thread from start() until stop()."""

    def __init__(self, folder: Path | None = None, every: float = SAMPLE_EVERY_S) -> None:
        self.folder = folder or (ENGINE_ROOT if ENGINE_ROOT.is_dir() else Path.cwd())
        self.every, self.done = every, threading.Event()
        self.start_free = self.lowest = shutil.disk_usage(self.folder).free
        self.samples = 1
        self.thread = threading.Thread(target=self._sample, name="disk-sampler", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _sample(self) -> None:
        while not self.done.wait(self.every):
            self.lowest = min(self.lowest, shutil.disk_usage(self.folder).free)
            self.samples += 1

    def stop(self) -> dict[str, float | int]:
        self.done.set()
        self.thread.join(timeout=60)
        self.lowest = min(self.lowest, shutil.disk_usage(self.folder).free)
        return {"free_at_start_gb": round(self.start_free / GB, 1), "lowest_free_gb": round(self.lowest / GB, 1),
                "peak_above_start_gb": round((self.start_free - self.lowest) / GB, 1), "samples": self.samples}


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
            "kernel": platform.release(), "python": platform.python_version(), "engine": engine()}


def engine() -> dict[str, str]:
    """The Docker engine the run's e2e tests used (the client's, as DOCKER_HOST names it), asked at the end of
    the run: its version and image store, so the report says which engine the suite proved. {} without one."""
    from pudev.common.errors import PudevError
    from pudev.engine import docker

    try:  # the client and environment the e2e tests use (PUDEV_DOCKER, DOCKER_HOST)
        answer = docker.run(["info", "--format", "{{json .}}"], check=False, timeout=60)
        info = json.loads(answer.stdout) if answer.returncode == 0 else {}
    except (OSError, ValueError, PudevError):
        return {}
    if not info.get("ServerVersion"):
        return {}
    # The containerd image store reports its snapshotter as the driver type; the graph drivers do not.
    containerd = ["driver-type", "io.containerd.snapshotter.v1"] in (info.get("DriverStatus") or [])
    return {"server": str(info["ServerVersion"]), "storage_driver": str(info.get("Driver", "")),
            "image_store": "containerd" if containerd else "graph driver"}


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
            "total_s": round(total_s, 1), "tests": len(times), "outcomes": dict(outcomes),
            "slowest": [{"test": item.nodeid, "seconds": round(item.seconds, 1)} for item in slowest],
            "files": per_file, "durations": {item.nodeid: round(item.seconds, 2) for item in times}}


class TimesRecorder:
    """The run's test times, written by `--times-report PATH`: each test's setup, call and teardown together,
    the whole session's wall time, its shard, and its disk (DiskSampler)."""

    def __init__(self, target: Path, shard: str = "") -> None:
        self.target, self.shard, self.started = target, shard, time.monotonic()
        self.seconds: dict[str, float] = {}
        self.outcomes: dict[str, str] = {}
        self.disk = DiskSampler()
        self.disk.start()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration
        worst = self.outcomes.get(report.nodeid, "passed")
        if report.failed:
            worst = "failed" if report.when == "call" else "error"
        elif report.skipped and worst == "passed":
            worst = "skipped"
        self.outcomes[report.nodeid] = worst

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        times = [TestTime(nodeid, seconds, self.outcomes[nodeid]) for nodeid, seconds in self.seconds.items()]
        report = summarize(times, total_s=time.monotonic() - self.started, description=machine(), when=time.time())
        report = {"shard": self.shard or "all", **report, "disk": self.disk.stop()}
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.target.write_text(json.dumps(report, indent=1) + "\n")
