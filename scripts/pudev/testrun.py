"""`pudev test VARIANT`: the in-image suite in a fresh, always-removed container.

A pass is recorded against the exact image id, which `pudev publish` requires.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pudev import engine
from pudev.common.errors import PudevError
from pudev.containers import TrackedContainer, sweep
from pudev.paths import state_dir

REPORT_MOUNT = "/pudev-report"


def container_options(report_dir: Path, *, gpus: bool) -> list[str]:
    options = ["--shm-size", "2g", "--volume", f"{report_dir}:{REPORT_MOUNT}"]
    if gpus:
        options += ["--gpus", "all"]
    for variable in ("PUDEV_REQUIRE_GPU", "PUDEV_STRICT"):
        if os.environ.get(variable):
            options += ["--env", f"{variable}={os.environ[variable]}"]
    return options


def passes_dir() -> Path:
    path = state_dir() / "passes"
    path.mkdir(parents=True, exist_ok=True)
    return path


def record_pass(image_id: str, tag: str, *, cpu_only: bool, gpus: bool) -> None:
    entry = {"image_id": image_id, "tag": tag, "cpu_only": cpu_only, "gpus": gpus, "passed_at": time.time()}
    (passes_dir() / f"{image_id.replace(':', '-')}.json").write_text(json.dumps(entry))


def has_passed(image_id: str) -> bool:
    return (passes_dir() / f"{image_id.replace(':', '-')}.json").exists()


def run_image_tests(tag: str, *, timeout: float, junit: Path | None = None, cpu_only: bool = False,
                    pytest_args: list[str] | None = None) -> int:
    engine.require_daemon()
    image_id = engine.image_id(tag)
    if image_id is None:
        raise PudevError(f"no image {tag} here: build it first (`pudev build {tag.rsplit(':', 1)[-1]}`)")
    sweep()
    gpus = engine.has_gpu_runtime()
    print(f"pudev: testing {tag} ({image_id[7:19]}) {'with' if gpus else 'without'} GPUs", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="pudev-report-") as report_dir:
        os.chmod(report_dir, 0o777)  # the image's non-root user writes the report
        command = ["pudev", "selftest", "--junit", f"{REPORT_MOUNT}/junit.xml"]
        if cpu_only:
            command.append("--cpu-only")
        command += ["--", *(pytest_args or [])]
        options = container_options(Path(report_dir), gpus=gpus)
        with TrackedContainer(tag, purpose="test", options=options) as container:
            code = container.run_attached(command, timeout=timeout)
        report = Path(report_dir) / "junit.xml"
        if junit is not None and report.exists():
            junit.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(report, junit)
    if code == 0 and not pytest_args:
        record_pass(image_id, tag, cpu_only=cpu_only, gpus=gpus)
    if code != 0:
        _require_daemon_still_up(tag)
    return code


def _require_daemon_still_up(tag: str) -> None:
    try:
        engine.require_daemon()
    except PudevError as error:
        raise PudevError(f"the Docker daemon went away while testing {tag}: {error}") from None
