"""One build per variant at a time: concurrent `pudev build` runs of the same image
serialise on a lock file instead of racing to tag it."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sys
from collections.abc import Iterator

from pudev.paths import state_dir


@contextlib.contextmanager
def one_build_at_a_time(tag: str) -> Iterator[None]:
    path = state_dir() / f"build-{re.sub(r'[^A-Za-z0-9_.-]+', '_', tag)}.lock"
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            message = f"pudev: another build of {tag} is running (pid {holder}); waiting for it"
            print(message, file=sys.stderr, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
