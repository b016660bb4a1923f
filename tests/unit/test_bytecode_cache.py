"""docker/steps/bytecode_cache.py: a .pyc restored from the cache is byte for byte what a compile of the file
as it is now would write, a changed file compiles again, and a file that will not compile is left without
one, as compileall leaves it."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest
from build_steps import load_step


@pytest.fixture(scope="module")
def cache_module() -> ModuleType:
    return load_step("bytecode_cache.py")


def _pyc(path: Path) -> Path:
    return Path(importlib.util.cache_from_source(str(path)))


def _install(site: Path, text: str, mtime: int) -> Path:
    """A package file as an install leaves it: fresh, with no .pyc yet."""
    source = site / "pkg" / "mod.py"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(text)
    os.utime(source, (mtime, mtime))
    if _pyc(source).exists():
        _pyc(source).unlink()
    return source


def test_a_cached_pyc_is_what_a_compile_would_write(cache_module: ModuleType, tmp_path: Path) -> None:
    cache, site = tmp_path / "cache", tmp_path / "site"
    cache.mkdir()
    source = _install(site, "VALUE = [n * n for n in range(10)]\n", 1_600_000_000)
    cache_module.compile_files([str(source)], str(cache))
    assert len(list(cache.rglob("*"))) == 2  # one shard directory, one entry

    # The next build: the same file, installed again with another time.
    source = _install(site, "VALUE = [n * n for n in range(10)]\n", 1_700_000_000)
    kept = list(cache.rglob("*"))
    cache_module.compile_files([str(source)], str(cache))
    restored = _pyc(source).read_bytes()
    assert list(cache.rglob("*")) == kept  # a hit: nothing compiled, nothing new kept
    _pyc(source).unlink()
    cache_module.compile_files([str(source)], None)
    assert restored == _pyc(source).read_bytes()
    assert oct(_pyc(source).stat().st_mode & 0o777) == oct((source.stat().st_mode | 0o200) & 0o666 & ~_umask())

    # A changed file is a miss: compiled, and its new code is what imports get.
    source = _install(site, "VALUE = 'changed'\n", 1_700_000_000)
    cache_module.compile_files([str(source)], str(cache))
    sys.path.insert(0, str(site))
    try:
        sys.modules.pop("pkg.mod", None)
        sys.modules.pop("pkg", None)
        sys.dont_write_bytecode = True  # an import may only read the .pyc
        module = importlib.import_module("pkg.mod")
        assert module.VALUE == "changed" and module.__cached__ == str(_pyc(source))
    finally:
        sys.dont_write_bytecode = False
        sys.path.remove(str(site))
        sys.modules.pop("pkg.mod", None)
        sys.modules.pop("pkg", None)
    assert len([path for path in cache.rglob("*") if path.is_file()]) == 2


def test_a_file_that_does_not_compile_gets_no_pyc_and_no_entry(cache_module: ModuleType, tmp_path: Path) -> None:
    cache, site = tmp_path / "cache", tmp_path / "site"
    cache.mkdir()
    source = _install(site, "def broken(:\n", 1_600_000_000)
    cache_module.compile_files([str(source)], str(cache))
    assert not _pyc(source).exists() and not [path for path in cache.rglob("*") if path.is_file()]


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
