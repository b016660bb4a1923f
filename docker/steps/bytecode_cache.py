"""Byte-compile Python files with a cache of earlier results, keyed by what decides the code object:
the interpreter's bytecode format (its magic number), the file's path (the code's co_filename) and its
content. A changed pin reinstalls a whole package layer, but most of its files are the same as the last
build's: those get their .pyc from the cache (a BuildKit cache mount) instead of a compile, and only the
changed package's files compile. A restored .pyc is exactly what py_compile would write: the cached body
under a timestamp header for the file as it is now (its mtime and size), so imports take it as valid.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys

HEADER_BYTES = 16  # magic, flags (0: timestamp-checked), source mtime, source size


def _key(path: str, source: bytes) -> str:
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER + path.encode() + b"\0" + source).hexdigest()
    return os.path.join(digest[:2], digest)


def _header(info: os.stat_result) -> bytes:
    return (importlib.util.MAGIC_NUMBER + bytes(4) + (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
            + (info.st_size & 0xFFFFFFFF).to_bytes(4, "little"))


def _write_atomic(path: str, data: bytes, mode: int) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.tmp"
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    os.replace(partial, path)


def compile_files(sources: list[str], cache: str | None) -> None:
    """Write the .pyc of every file in `sources`: from `cache` where it holds one, else compiled on every
    CPU (and then kept there). Without a cache, everything compiles."""
    misses: list[tuple[str, str]] = []
    for path in sources:
        if cache is None:
            misses.append((path, ""))
            continue
        with open(path, "rb") as handle:
            key = _key(path, handle.read())
        try:
            with open(os.path.join(cache, key), "rb") as handle:
                body = handle.read()
        except FileNotFoundError:
            misses.append((path, key))
            continue
        info = os.stat(path)
        # py_compile's mode: the source's, writable by its owner.
        _write_atomic(importlib.util.cache_from_source(path), _header(info) + body, (info.st_mode | 0o200) & 0o666)
    if not misses:
        return
    # A file that does not compile (a Python 2 template, say) stays without a .pyc, as pip leaves it.
    subprocess.run([sys.executable, "-m", "compileall", "-qq", "-j", "0", "-i", "-"],
                   input="\n".join(path for path, _ in misses), text=True, check=False)
    failed = 0
    for path, key in misses:
        compiled = importlib.util.cache_from_source(path)
        if not os.path.exists(compiled):
            failed += 1
        elif cache is not None:
            with open(compiled, "rb") as handle:
                _write_atomic(os.path.join(cache, key), handle.read()[HEADER_BYTES:], 0o644)
    if failed:
        print(f"bytecode_cache: {failed} file(s) do not compile and get no .pyc, as pip leaves them")
