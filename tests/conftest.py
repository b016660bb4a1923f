"""Shared by the host suites (tests/lint, tests/unit, tests/e2e): one seed for every random choice a test makes.

A test that needs randomness takes the `rng` fixture, a random.Random seeded from the run's seed and the
test's node id, so a test draws the same values whether it runs alone or with others. The run's seed is
`--seed N`, else PUDEV_TEST_SEED, else one derived from the clock; it is printed in the header and again
after any failure, so `PUDEV_TEST_SEED=N pytest ...` replays the run. Values that only have to be unique
(container names, tokens, temp folders) do not come from here. tests/image runs inside the image, without
this file.
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

# The maintainers' tools (tools/: the benchmarks, the docs' generated tables) import as their scripts do.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
# The shards' names, for --shard: tests/e2e/shards.py defines them (and what each one builds). By the
# checkout's root, so that a copy of this file (tests/unit/test_test_seed.py) finds them too.
sys.path.insert(0, str(REPO_ROOT / "tests" / "e2e"))

SEED_VARIABLE = "PUDEV_TEST_SEED"
SEED = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--seed", type=int, default=None,
                     help=f"seed for the tests' random choices (default: ${SEED_VARIABLE}, else from the clock)")
    parser.addoption("--times-report", default="", metavar="PATH",
                     help="write each test's duration, the totals per file, the run's wall time and its disk here "
                          "(JSON)")
    from shards import SHARDS

    parser.addoption("--shard", default="", choices=SHARDS, metavar="NAME",
                     help=f"run only this shard's tests ({', '.join(SHARDS)}; tests/e2e/shards.py); default: every "
                          "collected test, whatever its shard")


def pytest_configure(config: pytest.Config) -> None:
    seed: int | None = config.getoption("seed")
    if seed is None:
        text = os.environ.get(SEED_VARIABLE, "").strip()
        if text and not text.isdigit():
            raise pytest.UsageError(f"{SEED_VARIABLE}={text!r}: a seed is a non-negative integer")
        seed = int(text) if text else time.time_ns() // 1000 % 1_000_000
    config.stash[SEED] = seed
    target = config.getoption("times_report")
    if target:
        from times_report import TimesRecorder

        config.pluginmanager.register(TimesRecorder(Path(target), config.getoption("shard")), "pudev-times-report")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--shard NAME: deselect every test of another shard (a test is in `newest` unless marked shard(NAME))."""
    chosen = config.getoption("shard")
    if not chosen:
        return
    from shards import NEWEST

    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        marker = item.get_closest_marker("shard")
        (kept if (marker.args[0] if marker else NEWEST) == chosen else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_report_header(config: pytest.Config) -> str:
    return f"random seed: {config.stash[SEED]} (replay with {SEED_VARIABLE}={config.stash[SEED]})"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    if terminalreporter.stats.get("failed") or terminalreporter.stats.get("error"):
        seed = config.stash[SEED]
        terminalreporter.write_line(f"random seed was {seed}: replay with {SEED_VARIABLE}={seed} (or --seed {seed})")


# Read by code that keeps state between runs (test caches, pass records, build locks): a test that moves
# them and leaves them moved sends every later test's state somewhere else.
WATCHED_VARIABLES = ("HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "PUDEV_TEST_CACHE")


@pytest.fixture(autouse=True)
def _environment_left_as_found() -> object:
    """Fail the test that changes HOME or the XDG folders without undoing it (monkeypatch.setenv undoes)."""
    before = {name: os.environ.get(name) for name in WATCHED_VARIABLES}
    yield
    after = {name: os.environ.get(name) for name in WATCHED_VARIABLES}
    changed = {name: (before[name], after[name]) for name in WATCHED_VARIABLES if before[name] != after[name]}
    for name, (value, _) in changed.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    assert not changed, f"the test left {sorted(changed)} changed (use monkeypatch.setenv): {changed}"


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """This test's random source: the run's seed and the test's node id decide every value it draws."""
    return random.Random(f"{request.config.stash[SEED]}:{request.node.nodeid}")
