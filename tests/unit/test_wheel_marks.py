"""Wheels `pudev wheel` marks: what they were built against, a torch pin pip honours, a RECORD
that still verifies, and pip's start-up refusing one built for another torch, in one line."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pudev.image.wheels import guard, marker, repack

BUILT = marker.BuiltAgainst(torch="2.4.1", cuda="12.1", python="3.11", arch_list="8.0", toolkit="12.4", image="cu121")
METADATA = "Metadata-Version: 2.1\nName: fastop\nVersion: 1.2.0\nRequires-Dist: torch>=2.0\nRequires-Dist: numpy\n\n" \
           "A long description.\n\nWith paragraphs.\n"


def make_wheel(folder: Path, *, compiled: bool = True, version: str = "1.2.0") -> Path:
    wheel = folder / f"fastop-{version}-cp311-cp311-linux_x86_64.whl"
    files = {"fastop/__init__.py": b"from ._C import add\n", f"fastop-{version}.dist-info/METADATA":
             METADATA.replace("1.2.0", version).encode(), f"fastop-{version}.dist-info/WHEEL":
             b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n",
             f"fastop-{version}.data/scripts/fastop-info": b"#!python\nprint('hi')\n"}
    if compiled:
        files["fastop/_C.cpython-311-x86_64-linux-gnu.so"] = b"\x7fELF not really"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(f"fastop-{version}.dist-info/RECORD", "")
    return wheel


def test_a_marked_wheel_carries_its_torch_in_name_metadata_and_marker(tmp_path: Path) -> None:
    out = tmp_path / "house"
    out.mkdir()
    marked = repack.mark(make_wheel(tmp_path), BUILT, out)
    assert marked.name == "fastop-1.2.0+pt241cu121-cp311-cp311-linux_x86_64.whl"
    assert marker.read(str(marked)) == BUILT
    with zipfile.ZipFile(marked) as archive:
        names = archive.namelist()
        meta = archive.read("fastop-1.2.0+pt241cu121.dist-info/METADATA").decode()
        assert "fastop-1.2.0+pt241cu121.data/scripts/fastop-info" in names
        assert not any(name.startswith("fastop-1.2.0.") for name in names)
        head, _, body = meta.partition("\n\n")
        assert "Version: 1.2.0+pt241cu121" in head.splitlines()
        assert [line for line in head.splitlines() if line.startswith("Requires-Dist")] == [
            "Requires-Dist: numpy", "Requires-Dist: torch==2.4.1"]
        assert body == "A long description.\n\nWith paragraphs.\n"
        for line in archive.read("fastop-1.2.0+pt241cu121.dist-info/RECORD").decode().splitlines():
            path, digest, size = line.split(",")
            if path.endswith("/RECORD"):
                assert digest == size == ""
                continue
            data = archive.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={expected}" and int(size) == len(data), path
    assert not list(out.glob(".*partial"))


def test_a_local_label_already_there_is_extended(tmp_path: Path) -> None:
    out = tmp_path / "house"
    out.mkdir()
    marked = repack.mark(make_wheel(tmp_path, version="1.2.0+abc"), BUILT, out)
    assert marked.name == "fastop-1.2.0+abc.pt241cu121-cp311-cp311-linux_x86_64.whl"


def test_pip_reads_the_marked_wheel_as_valid(tmp_path: Path) -> None:
    """pip's own wheel checks (name, version and .dist-info agree) accept the rewrite."""
    out = tmp_path / "house"
    out.mkdir()
    marked = repack.mark(make_wheel(tmp_path, compiled=False), BUILT, out)
    script = ("import sys, zipfile\nfrom pip._internal.utils.wheel import wheel_dist_info_dir\n"
              "print(wheel_dist_info_dir(zipfile.ZipFile(sys.argv[1]), 'fastop'))")
    check = subprocess.run([sys.executable, "-c", script, str(marked)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr
    assert check.stdout.strip() == "fastop-1.2.0+pt241cu121.dist-info"


def test_mismatch_names_each_difference() -> None:
    here = marker.BuiltAgainst(torch="2.15.0", cuda="13.2", python="3.11")
    assert BUILT.mismatch(here) == "torch 2.4.1 (this image: 2.15.0), CUDA 12.1 (this image: 13.2)"
    assert BUILT.mismatch(marker.BuiltAgainst(torch="2.4.1", cuda="12.1", python="3.11")) == ""


@pytest.mark.parametrize(("argv", "expected"), [
    (["/usr/bin/pip", "install", "x.whl"], True), (["-m", "install", "x.whl"], True),
    (["/usr/bin/pip", "download", "x.whl"], False), (["train.py", "install"], False), ([], False)])
def test_only_pip_install_is_guarded(argv: list[str], expected: bool) -> None:
    assert guard.is_pip_install(argv) is expected


def test_a_foreign_wheel_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "house"
    out.mkdir()
    marked = str(repack.mark(make_wheel(tmp_path), BUILT, out))
    plain = str(make_wheel(tmp_path / "..", compiled=False))
    monkeypatch.setattr(marker, "this_image", lambda: marker.BuiltAgainst(torch="2.15.0", cuda="13.2", python="3.11"))
    exits: list[int] = []
    monkeypatch.setattr("os._exit", exits.append)
    guard.refuse_foreign_wheels(["/usr/bin/pip", "install", plain])  # unmarked: not ours to judge
    assert exits == []
    guard.refuse_foreign_wheels(["/usr/bin/pip", "install", marked])
    assert exits == [1]
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"pudev: not installing {Path(marked).name} was built against torch 2.4.1 (this image: "
                          "2.15.0), CUDA 12.1 (this image: 13.2)")
    assert "pudev wheel NAME" in err
    monkeypatch.setattr(marker, "this_image", lambda: marker.BuiltAgainst(torch="2.4.1", cuda="12.1", python="3.11"))
    guard.refuse_foreign_wheels(["/usr/bin/pip", "install", marked])  # its own image: installs
    assert exits == [1]


def test_marking_again_replaces_the_mark(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    marked = repack.mark(make_wheel(tmp_path), BUILT, first)
    other = marker.BuiltAgainst(torch="2.15.0", cuda="13.2", python="3.11")
    again = repack.mark(marked, other, second)
    assert again.name == "fastop-1.2.0+pt241cu121.pt2150cu132-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(again) as archive:
        names = archive.namelist()
    assert len(names) == len(set(names))
    assert marker.read(str(again)) == other
