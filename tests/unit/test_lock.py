"""`pudev lock` and `pudev new-torch` resolve with uv for the variant's Python, which this host need not
have: uv must then resolve for that version without fetching an interpreter. Behind a blocked network a
fetch waits on its timeout (every lock of a release-day move paid about 9 s here for one that failed).
A local server stands in for uv's Python downloads and records every request; the packages come from a
local folder, so no test here reaches a network."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pudev.devtools import lock
from pudev.devtools.new_torch import answers

# A minor no uv finds here (the venv's is the only Python on PATH), so uv would fetch one.
OTHER_PYTHON = f"3.{sys.version_info.minor + 1}"
PROBE = "pudev-probe"


def _wheel(folder: Path) -> None:
    files = {"pudev_probe/__init__.py": b"",
             "pudev_probe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pudev-probe\nVersion: 1.0\n",
             "pudev_probe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                b"Tag: py3-none-any\n"}
    record = "".join(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()}"
                     f",{len(data)}\n" for name, data in files.items())
    with zipfile.ZipFile(folder / "pudev_probe-1.0-py3-none-any.whl", "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr("pudev_probe-1.0.dist-info/RECORD", record + "pudev_probe-1.0.dist-info/RECORD,,\n")


@pytest.fixture
def python_downloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths uv asked the stand-in for its Python downloads for."""
    asked: list[str] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    links = tmp_path / "links"
    links.mkdir()
    _wheel(links)
    for name in ("UV_OFFLINE", "UV_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX",
                 "UV_PYTHON_DOWNLOADS", "UV_PYTHON", "VIRTUAL_ENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_FIND_LINKS", str(links))
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(tmp_path / "pythons"))
    monkeypatch.setenv("UV_PYTHON_INSTALL_MIRROR", f"http://127.0.0.1:{server.server_port}")
    try:
        yield asked
    finally:
        server.shutdown()
        server.server_close()


def test_uv_alone_would_fetch_a_python_here(python_downloads: list[str], tmp_path: Path) -> None:
    """The control: the same resolution without the flag asks the download server, so the tests below can
    fail."""
    source = tmp_path / "in.txt"
    source.write_text(f"{PROBE}\n")
    subprocess.run([lock.uv_command(), "pip", "compile", str(source), "--quiet", "--python-version", OTHER_PYTHON],
                   capture_output=True, text=True, check=False, timeout=120)
    assert python_downloads, "uv found a Python of the version asked for: this host cannot show the fetch"


def test_a_lock_fetches_no_python(python_downloads: list[str], tmp_path: Path) -> None:
    source, target = tmp_path / "in.txt", tmp_path / "lock.txt"
    source.write_text(f"{PROBE}\n")
    lock.compile_lock(source, target, python=OTHER_PYTHON, platform="linux/amd64", header="# test\n")
    assert python_downloads == []
    assert f"{PROBE}==1.0" in target.read_text() and "--hash=sha256:" in target.read_text()


def test_new_torchs_lookup_fetches_no_python(python_downloads: list[str]) -> None:
    found = answers._pylock([PROBE], platform="linux/arm64", python=OTHER_PYTHON)
    assert python_downloads == []
    assert [package["name"] for package in found or []] == [PROBE]
