"""The benchmark's sdist comes from the index's simple API by its pinned hash, from a local index."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pudev.common.errors import PudevError
from pudev.devtools.sdist import SIMPLE_JSON, fetch_sdist

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
