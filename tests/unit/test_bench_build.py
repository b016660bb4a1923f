"""bench-build (tools/bench_build.py): its reading of BuildKit logs, the probes it pins, and its verdicts."""

from __future__ import annotations

import pytest
from bench_build import Measurement, extra_compilers, io_pressure, median_of, probes, rebuilt_steps, render

from pudev.common.errors import PudevError

LOG = """\
#5 [final  1/17] FROM docker.io/pudev-standin/pytorch:2.4.1-cuda12.1
#5 DONE 0.0s
#7 [toolkit-a 2/2] RUN sh /tmp/prune-toolkit.sh /usr/local/cuda-11.8
#7 CACHED
#9 [final 12/17] COPY scripts/pudev /opt/pudev/lib/pudev
#9 DONE 0.1s
#10 [final 17/17] RUN sh /tmp/steps/write-record.sh "${IMAGE_RECORD}"
#10 0.3 record: /etc/pudev/image.json
#10 DONE 0.9s
#11 [final 14/17] RUN sh /tmp/steps/install-packages.sh "${BUILD_MIRROR}" the-rest
#11 CACHED
#11 [final 14/17] RUN sh /tmp/steps/install-packages.sh "${BUILD_MIRROR}" the-rest
#11 DONE 1.5s
"""


def test_rebuilt_steps_are_the_ones_that_ran() -> None:
    # A step reported CACHED and then run all the same (#11) ran; one reported CACHED alone did not.
    assert rebuilt_steps(LOG) == ["[final 12/17] COPY scripts/pudev /opt/pudev/lib/pudev",
                                  '[final 17/17] RUN sh /tmp/steps/write-record.sh "${IMAGE_RECORD}"',
                                  '[final 14/17] RUN sh /tmp/steps/install-packages.sh "${BUILD_MIRROR}" the-rest']


def test_the_median_run_stands_for_its_samples_with_its_own_steps() -> None:
    runs = [Measurement("cold", seconds, 1.0, [f"ran {seconds}"], download_bytes=int(seconds),
                        steps=[{"step": "x", "seconds": seconds}]) for seconds in (55.7, 32.0, 44.4)]
    middle = median_of(runs)
    assert (middle.seconds, middle.rebuilt, middle.download_bytes) == (44.4, ["ran 44.4"], 44)
    assert middle.samples == [55.7, 32.0, 44.4]  # in the order they ran
    with pytest.raises(ValueError, match="odd number"):
        median_of(runs[:2])


def test_each_part_is_pinned_by_a_package_the_image_installs() -> None:
    lock = ("numpy==2.1.0 \\\n    --hash=sha256:aa\nscipy==1.14.0 \\\n    --hash=sha256:bb\n"
            "tqdm==4.66.0 \\\n    --hash=sha256:cc\n")
    assert probes(lock, shipped={"numpy"}) == {"rarely-changing": "scipy", "the-rest": "tqdm"}
    with pytest.raises(PudevError, match="nothing to pin"):
        probes(lock, shipped={"numpy", "scipy"})


def test_the_naive_build_installs_the_older_gxx_the_image_has() -> None:
    record = {"toolkits": [{"version": "11.8", "host_compiler": "g++-11"}, {"version": "12.4", "host_compiler": "g++"},
                           {"version": "11.7", "host_compiler": "g++-11"}]}
    assert extra_compilers(record) == ["g++-11"]
    assert extra_compilers({"toolkits": [{"version": "13.2", "host_compiler": "g++"}]}) == []


def test_targets_in_the_table() -> None:
    results = [Measurement("naive", 60.0, 1.0, ["a"] * 6), Measurement("cold", 50.0, 0.83, ["a"] * 18),
               Measurement("tool-edit", 2.5, 0.05, ["a"] * 3, download_bytes=300_000),
               Measurement("pin-the-rest", 12.0, 0.24, ["a"] * 5, "tqdm 4.66.0", download_bytes=90_000_000),
               Measurement("pin-rarely-changing", 25.0, 0.5, ["a"] * 6, "scipy 1.14.0", download_bytes=150_000_000),
               Measurement("no-op", 1.0, 0.02, [])]
    text = render(results, {"a": 300_000_000, "b": 230_000_000})
    rows = {line.split()[0]: line for line in text.splitlines() if line and line.split()[0] in
            ("naive", "cold", "tool-edit", "pin-the-rest", "pin-rarely-changing", "no-op")}
    assert rows["cold"].endswith("MISSED <= 80%")  # of the naive build
    assert rows["pin-the-rest"].startswith("pin-the-rest (tqdm 4.66.0)")
    assert rows["pin-the-rest"].endswith("MISSED <= 80 MB")  # what users pull again
    assert rows["pin-rarely-changing"].endswith("-") and rows["naive"].endswith("-")
    assert rows["tool-edit"].endswith("ok") and rows["no-op"].endswith("ok")
    assert "530 MB (target <= 520 MB" in text  # the total and its target


def test_io_pressure_is_psis_share_of_the_last_10_seconds() -> None:
    text = "some avg10=12.50 avg60=3.00 avg300=0.50 total=123\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=9\n"
    assert io_pressure(text) == 12.5
    with pytest.raises(PudevError, match="some avg10"):
        io_pressure("full avg10=1.00\n")
