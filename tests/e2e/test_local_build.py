"""The stand-in build of cu121, and the in-image suite run inside it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from e2e_support import LocalImage, SuiteRun, build_context_copy, run_pudev

from pudev import engine

pytestmark = [pytest.mark.engine, pytest.mark.slow]
CACHE_PROBE_IMAGE = "pudev-cacheprobe/pytorch-universal-dev"


def test_build_is_the_local_profile_of_cu121(local_image: LocalImage) -> None:
    record = json.loads(engine.run(["run", "--rm", local_image.tag, "pudev", "record"]).stdout)
    assert record["variant"] == "cu121" and record["cuda"] == "12.1" and record["torch"] == "2.4.1"
    assert [t["version"] for t in record["toolkits"]] == ["11.8", "12.4"]
    assert record["default_toolkit"] == "12.4"


def test_another_variants_lock_leaves_this_build_cached(local_image: LocalImage, tmp_path: Path) -> None:
    # A build-context copy whose cu118 lock is broken, built under its own name: cu121's
    # package step must come from the cache (it would fail or rerun if it saw that lock).
    root = build_context_copy(tmp_path)
    other = root / "requirements/lock/cu118.txt"
    other.write_text(re.sub(r"^tqdm==\S+", "tqdm==99.0.0", other.read_text(), flags=re.MULTILINE))
    try:
        log = run_pudev("build", "--profile", "local", "--set", f"image={CACHE_PROBE_IMAGE}",
                        env={"PUDEV_ROOT": str(root)}, timeout=1800, check=True).stdout
    finally:
        engine.run(["rmi", f"{CACHE_PROBE_IMAGE}:cu121"], check=False)
    package_steps = re.findall(r"^#(\d+) \[final\s+\d+/\d+\] RUN .*uv pip install", log, re.MULTILINE)
    assert len(package_steps) == 1, log[-3000:]
    assert f"#{package_steps[0]} CACHED" in log, log[-3000:]


def test_image_suite_passes_and_only_gpu_checks_skip(image_suite: SuiteRun) -> None:
    assert image_suite.returncode == 0, image_suite.output
    cases = ElementTree.parse(image_suite.junit).getroot().iter("testcase")
    outcomes: dict[str, str] = {}
    for case in cases:
        name = f"{case.get('classname')}.{case.get('name')}"
        skipped = case.find("skipped")
        if skipped is not None:
            outcomes[name] = "skipped: " + (skipped.get("message") or "")
        elif case.find("failure") is not None or case.find("error") is not None:
            outcomes[name] = "failed"
        else:
            outcomes[name] = "passed"
    gpu = {name: outcome for name, outcome in outcomes.items() if ".test_gpu." in f".{name}"}
    others = {name: outcome for name, outcome in outcomes.items() if name not in gpu}
    assert len(others) >= 20 and all(outcome == "passed" for outcome in others.values()), others
    # No GPU here: every GPU test must have skipped, with the reason; none passed vacuously.
    assert len(gpu) >= 5
    assert all(outcome.startswith("skipped: ") and "no GPU visible" in outcome for outcome in gpu.values()), gpu


def test_require_gpu_turns_gpu_skips_into_failures(local_image: LocalImage) -> None:
    result = engine.run(["run", "--rm", "--env", "PUDEV_REQUIRE_GPU=1", local_image.tag, "pudev", "selftest", "--",
                         "-k", "test_cuda_is_available", "-p", "no:randomly"], check=False, timeout=600)
    assert result.returncode == 1
    assert "PUDEV_REQUIRE_GPU=1 but no GPU visible" in result.stdout


def test_pass_is_recorded_for_the_exact_image(local_image: LocalImage, image_suite: SuiteRun) -> None:
    from pudev.testrun import has_passed

    assert has_passed(local_image.image_id)
