"""The host suites' randomness replays: tests/conftest.py's seed, printed in the header and after a failure."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

DRAWING_TEST = '''
import random


def test_draws(rng: random.Random) -> None:
    print(f"drew {rng.random()!r}")
    assert False
'''


def _run(folder: Path, seed: str | None, *args: str) -> str:
    environment = {key: value for key, value in os.environ.items() if key != "PUDEV_TEST_SEED"}
    if seed is not None:
        environment["PUDEV_TEST_SEED"] = seed
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "-c", os.devnull,
                             "--rootdir", str(folder), str(folder), *args], env=environment, capture_output=True,
                            text=True, check=False, timeout=120)
    return result.stdout + result.stderr


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A folder with the host suites' conftest and one test that draws a number and fails."""
    shutil.copyfile(REPO_ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_draw.py").write_text(DRAWING_TEST)
    return tmp_path


def test_a_seed_replays_the_draws_and_failures_name_it(suite: Path) -> None:
    first, again, other = _run(suite, "4242"), _run(suite, "4242"), _run(suite, None, "--seed", "7")
    assert "random seed: 4242 (replay with PUDEV_TEST_SEED=4242)" in first
    assert "random seed was 4242: replay with PUDEV_TEST_SEED=4242" in first
    assert "random seed: 7 " in other
    drawn = [re.findall(r"drew (\S+)", output) for output in (first, again, other)]
    assert drawn[0] and drawn[0] == drawn[1] != drawn[2]


def test_without_a_seed_one_is_chosen_and_shown(suite: Path) -> None:
    assert re.search(r"random seed: \d+ \(replay with PUDEV_TEST_SEED=\d+\)", _run(suite, None))
    assert "PUDEV_TEST_SEED='x'" in _run(suite, "x")
