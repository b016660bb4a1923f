"""bench-ext (tools/bench_ext.py): its sdist comes from the index's simple API by its pinned hash (here a
local index), and a run's facts."""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

import bench_ext
import pytest
from bench_ext import SIMPLE_JSON, fetch_sdist

from pudev.common.errors import PudevError

if TYPE_CHECKING:
    from bench_ext import Run

PAYLOAD = b"not really a tarball, but bytes with a hash"
DIGEST = hashlib.sha256(PAYLOAD).hexdigest()


class Index(BaseHTTPRequestHandler):
    asked: list[tuple[str, str]] = []  # noqa: RUF012 (one list for the class: the server makes a handler per request)

    def do_GET(self) -> None:
        Index.asked.append((self.path, self.headers.get("Accept", "")))
        if self.path == "/simple/fastop/":
            body = json.dumps({"files": [{"filename": "fastop-1.0.tar.gz", "url": "../../files/fastop-1.0.tar.gz",
                                          "hashes": {"sha256": DIGEST}}]}).encode()
        elif self.path == "/files/fastop-1.0.tar.gz":
            body = PAYLOAD
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/simple/"
    monkeypatch.setenv("PIP_INDEX_URL", url)
    Index.asked.clear()
    yield url
    server.shutdown()


def test_the_pinned_file_is_fetched_once_by_hash(index: str, tmp_path: Path) -> None:
    first = fetch_sdist("fastop", "1.0", DIGEST, tmp_path)
    assert first.read_bytes() == PAYLOAD and first.name == "fastop-1.0.tar.gz"
    assert Index.asked[0] == ("/simple/fastop/", SIMPLE_JSON)
    asked = len(Index.asked)
    assert fetch_sdist("fastop", "1.0", DIGEST, tmp_path) == first
    assert len(Index.asked) == asked, "a file already here with the pinned hash is used as it is"


def test_a_wrong_pin_is_refused_with_the_reason(index: str, tmp_path: Path) -> None:
    with pytest.raises(PudevError, match=r"no file of fastop 1\.0 with sha256 000000000000"):
        fetch_sdist("fastop", "1.0", "0" * 64, tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_bench_run_keeps_each_compiles_peak_and_its_largest() -> None:
    """bench-ext's per-compile peaks (PUDEV_COMPILE_LOG's lines) in GiB, and the largest beside the cgroup's."""
    from bench_ext import _run

    data = {"rc": 0, "seconds": 50.0, "peak_bytes": 3 * 1024**3, "oom_kills": 0, "max_jobs": "1", "hits": 0,
            "misses": 2, "nvcc_compiles": 1, "jobs": [
                {"compiler": "c++", "source": "a.cpp", "exit": 0, "seconds": 9.5, "peak_bytes": 1536 * 1024**2},
                {"compiler": "nvcc", "source": "b.cu", "exit": 0, "seconds": 30.0, "peak_bytes": 2816 * 1024**2}]}
    run = _run("derived jobs", data, 100.0)
    assert (run.largest_job_gib, run.ratio, run.peak_gib) == (2.75, 0.5, 3.0)
    assert [(job["source"], job["peak_gib"]) for job in run.jobs] == [("a.cpp", 1.5), ("b.cu", 2.75)]
    assert "peak_bytes" not in run.jobs[0]
    assert _run("warm", {**data, "jobs": []}, 100.0).largest_job_gib == 0.0
    assert _run("derived jobs", data, None).ratio is None  # a memory run is a cold build itself


def _threads_run(scenario: str, seconds: float, rc: int = 0) -> Run:
    from bench_ext import _run

    return _run(scenario, {"rc": rc, "seconds": seconds, "peak_bytes": 0, "oom_kills": 0, "max_jobs": "", "hits": 0,
                           "misses": 0, "nvcc_compiles": 4, "jobs": []}, None)


def test_the_threads_part_reports_both_cold_times_and_their_ratio() -> None:
    from bench_ext import THREADS_DERIVED, THREADS_NINJA, threads_summary

    derived = _threads_run(THREADS_DERIVED, 210.0)
    assert threads_summary([derived]) is None  # halfway: no ratio yet
    summary = threads_summary([derived, _threads_run(THREADS_NINJA, 200.0)])
    assert summary == {"derived_seconds": 210.0, "ninja_default_seconds": 200.0, "ratio": 1.05, "target": 1.05,
                       "met": True}
    failed = _threads_run(THREADS_NINJA, 100.0, rc=1)
    assert threads_summary([derived, failed]) is None


def test_the_synthetic_package_has_the_shape_of_issue_26() -> None:
    """Its own --threads 4 and four -gencode targets every toolkit here compiles (CUDA 13 has none below sm_75),
    and its large .cu listed last, so ninja compiles it last."""
    from bench_ext import THREADS_SOURCE

    setup = (THREADS_SOURCE / "setup.py").read_text()
    targets = ast.literal_eval(setup.split("TARGETS = ", 1)[1].split("  #", 1)[0])
    assert len(targets) == 4 and min(int(arch) for arch in targets) >= 75
    assert '"--threads", "4"' in setup and '"-gencode"' in setup
    sources = re.findall(r'"(csrc/[\w.]+)"', setup)
    assert sources[-1] == "csrc/fused_ops.cu" and all((THREADS_SOURCE / source).is_file() for source in sources)
    assert max(sources, key=lambda source: (THREADS_SOURCE / source).stat().st_size) == sources[-1]
    assert "#include <torch/extension.h>" in (THREADS_SOURCE / sources[-1]).read_text()


def test_an_index_login_travels_as_a_header_never_in_the_url() -> None:
    request = bench_ext.index_request("https://user:s%40cret@index.example:8443/simple/pkg/", "application/json")
    assert request.full_url == "https://index.example:8443/simple/pkg/"  # what an error may repeat
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"user:s@cret").decode()
    assert "Authorization" not in bench_ext.index_request("https://index.example/simple/").headers
