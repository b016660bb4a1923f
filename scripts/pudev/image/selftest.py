"""`pudev selftest`: run the image's own test suite (tests/image) inside it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

TESTS_DIR = Path(os.environ.get("PUDEV_TESTS_DIR", "/opt/pudev/tests"))


def pytest_args(extra: list[str], *, cpu_only: bool, junit: str, gpu_only: bool = False,
                platform_only: bool = False) -> list[str]:
    args = [str(TESTS_DIR), "-p", "no:cacheprovider", "-ra", "--color=yes"]
    if cpu_only:
        args += ["-m", "not gpu"]
    if gpu_only:
        args += ["-m", "gpu"]
    if platform_only:
        args += ["-m", "platform and not gpu"]
    if junit:
        args += [f"--junitxml={junit}"]
    return args + extra


def run(extra: list[str], *, cpu_only: bool = False, gpu_only: bool = False, platform_only: bool = False,
        junit: str = "") -> int:
    # pytest is imported here so the rest of the CLI starts fast.
    import pytest

    sys.dont_write_bytecode = True  # the image's layers stay as built
    if gpu_only:
        os.environ["PUDEV_REQUIRE_GPU"] = "1"  # the GPU half proves nothing by skipping
    return int(pytest.main(pytest_args(extra, cpu_only=cpu_only, gpu_only=gpu_only, platform_only=platform_only,
                                   junit=junit)))
