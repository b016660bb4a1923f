"""bench-build's reading of BuildKit logs and its target verdicts."""

from __future__ import annotations

import pytest

from pudev.common.errors import PudevError
from pudev.devtools.benchbuild import (
    Measurement,
    children_first,
    extra_compilers,
    io_pressure,
    median_of,
    pinned_release,
    rebuilt_steps,
    render,
)

LOG = """\
#5 [final  1/17] FROM docker.io/pudev-standin/pytorch:2.4.1-cuda12.1
#5 DONE 0.0s
#7 [toolkit-a 2/2] RUN sh /tmp/prune-toolkit.sh /usr/local/cuda-11.8
#7 CACHED
#9 [final 12/17] COPY scripts/pudev/image /opt/pudev/lib/pudev/image
#9 DONE 0.1s
#10 [final 17/17] RUN echo /opt/pudev/lib > x
#10 0.3 record: /etc/pudev/image.json
#10 DONE 0.9s
#11 [packages-plotting 1/1] RUN sh /tmp/install-layer.sh
#11 CACHED
#11 [packages-plotting 1/1] RUN sh /tmp/install-layer.sh
#11 0.1 lock-against-base: 8 packages to install
#11 CACHED
#11 [packages-plotting 1/1] RUN sh /tmp/install-layer.sh
#11 DONE 1.5s
"""


def test_rebuilt_steps_are_the_ones_that_ran() -> None:
    # A step reported CACHED and then run all the same (#11) ran; one reported CACHED alone did not.
    assert rebuilt_steps(LOG) == ["[final 12/17] COPY scripts/pudev/image /opt/pudev/lib/pudev/image",
                                  "[final 17/17] RUN echo /opt/pudev/lib > x",
                                  "[packages-plotting 1/1] RUN sh /tmp/install-layer.sh"]


def test_the_median_run_stands_for_its_samples_with_its_own_steps() -> None:
    runs = [Measurement("cold", seconds, 1.0, [f"ran {seconds}"], steps=[{"step": "x", "seconds": seconds}])
            for seconds in (55.7, 32.0, 44.4)]
    middle = median_of(runs)
    assert (middle.seconds, middle.rebuilt, middle.steps) == (44.4, ["ran 44.4"], [{"step": "x", "seconds": 44.4}])
    assert middle.samples == [55.7, 32.0, 44.4]  # in the order they ran
    pins = [Measurement("pin-change-language", seconds, 0.2, [], "jedi", releases=[release])
            for seconds, release in ((6.4, "0.20.0"), (5.9, "0.19.2"), (6.0, "0.19.1"))]
    assert median_of(pins).releases == ["0.20.0", "0.19.2", "0.19.1"]  # beside their samples
    with pytest.raises(ValueError, match="odd number"):
        median_of(runs[:2])


def test_a_pin_samples_release_is_read_from_its_lock() -> None:
    lock = ("babel==2.19.0 \\\n    --hash=sha256:aa\n"
            "jedi==0.19.2 \\\n    --hash=sha256:bb\n    # via ipython\n")
    assert pinned_release(lock, "Jedi") == "0.19.2"
    assert pinned_release(lock, "babel") == "2.19.0"
    assert pinned_release(lock, "parso") is None


def test_the_naive_build_installs_the_older_gxx_the_image_has() -> None:
    # The cu121 stand-in on a gcc 12 base: nvcc 11.8 takes g++-11, named once for two toolkits that need it.
    record = {"toolkits": [{"version": "11.8", "host_compiler": "g++-11"}, {"version": "12.4", "host_compiler": "g++"},
                           {"version": "11.7", "host_compiler": "g++-11"}]}
    assert extra_compilers(record) == ["g++-11"]
    assert extra_compilers({"toolkits": [{"version": "13.2", "host_compiler": "g++"}]}) == []


def test_targets_in_the_table() -> None:
    results = [Measurement("naive", 180.0, 1.0, ["a"] * 6), Measurement("cold", 100.0, 0.556, ["a"] * 18),
               Measurement("tool-edit", 2.5, 0.025, ["a"] * 5),
               Measurement("pin-change-rest", 25.0, 0.25, ["a"] * 9, "tqdm"),
               Measurement("pin-change-numerical", 15.0, 0.15, ["a"] * 11, "scipy"),
               Measurement("no-op", 1.0, 0.01, [])]
    sizes = {"size": 7 * 1024**3, "base_size": 5 * 1024**3, "added_over_base": 2 * 1024**3,
             "layers": [{"size": 300 * 1024**2, "created_by": "COPY /usr/local/cuda-11.8"}]}
    text = render(results, sizes, previous={"cold": 120.0})
    rows = {line.split()[0]: line for line in text.splitlines() if line and line.split()[0] in
            ("naive", "cold", "tool-edit", "pin-change-rest", "pin-change-numerical", "no-op")}
    assert rows["tool-edit"].endswith("ok") and rows["no-op"].endswith("ok")
    assert rows["pin-change-rest"].startswith("pin-change-rest (tqdm)")
    assert rows["pin-change-rest"].endswith("MISSED (<= 20%)")  # any package layer: a fifth of cold
    assert rows["pin-change-numerical"].startswith("pin-change-numerical (scipy)")
    assert rows["pin-change-numerical"].endswith("ok")
    assert rows["cold"].endswith("MISSED (<= 50%)")  # cold against the naive build: half at most
    assert rows["naive"].endswith("-")  # the yardstick has no target
    assert "120.0" in rows["cold"]
    assert "image 7168 MiB = base 5120 MiB + 2048 MiB added" in text


def test_build_cache_records_are_pruned_children_first() -> None:
    # root <- a <- b <- c, root <- d; "x" was there before the run, so it is not among those pruned.
    parents = {"a": "root", "b": "a", "c": "b", "d": "root", "root": "", "x": ""}
    order = children_first({"a", "b", "c", "d", "root"}, parents)
    assert order.index("c") < order.index("b") < order.index("a") < order.index("root")
    assert order.index("d") < order.index("root") and sorted(order) == ["a", "b", "c", "d", "root"]
    assert children_first({"loop"}, {"loop": "loop"}) == ["loop"]  # a malformed parent chain still ends


def test_io_pressure_is_psis_share_of_the_last_10_seconds() -> None:
    text = "some avg10=12.50 avg60=3.00 avg300=0.50 total=123\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=9\n"
    assert io_pressure(text) == 12.5
    with pytest.raises(PudevError, match="some avg10"):
        io_pressure("full avg10=1.00\n")
