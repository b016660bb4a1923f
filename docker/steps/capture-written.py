"""Run a build step in a stage of its own on the bare base, and move everything it wrote under one
directory, which the final stage copies onto / with `COPY --from=STAGE DIR/ /`.

So a step that needs only the base (the OS packages, each Python package layer) runs side by side
with the others, and its layer holds exactly what it would have written in place. What it wrote is
found by inode change time (no copy or unpack can set it back): files and links are renamed into
DIR (same file system, so nothing is copied twice, as a tar would), and the directories it made or
changed, with every directory above them, are made again there with their owner, mode and times,
so that the COPY leaves the image's directories as they were. The walk stays on the root's file
system (off /tmp, the cache mounts and the secret) and off the files BuildKit mounts into /etc.
Where / is an overlayfs mount, as BuildKit's and Docker's overlay snapshots make it, the step writes
into a fresh upper layer, which must hold every directory above what it changed: copied up then, each
has a new ctime, so the walk skips a directory with an old one (on a language layer's step, 42,000
entries walked become a few thousand). Anywhere else (a snapshotter that copies the tree) it walks all.
With --compile, the .py files it wrote are byte-compiled before they move (their .pyc files move
with them), from the same walk (a second walk of / to find them cost about half a second a stage),
through bytecode_cache.py with the cache mount at BYTECODE_CACHE where the stage has one.
DIR `-` leaves what the step wrote where it is and only compiles it: the step over the layers in the
final stage (install-layer.sh since), whose own layer is what it wrote.
Usage: python3 capture-written.py [--compile] DIR|- COMMAND [ARG...]
"""

from __future__ import annotations

import importlib.util
import os
import stat
import subprocess
import sys

MARK = "/tmp/pudev-step-started"
BYTECODE_CACHE = "/root/.cache/pudev-bytecode"  # a cache mount where the stage has one
# Mount points whose roots change under the step without its doing (cache and secret mounts).
SKIPPED = {"/tmp", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/run/secrets", "/root/.cache/uv",
           "/root/.cache/pip", BYTECODE_CACHE, "/var/cache/apt", "/var/lib/apt/lists"}


def copies_up(root: str, mountinfo: str = "/proc/self/mountinfo") -> bool:
    """Whether `root` is an overlayfs mount (the topmost of those on it): then a directory the step
    changed nothing under has an old ctime, since it was never copied up."""
    fstype = ""
    with open(mountinfo, encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            if fields[4] == root:
                fstype = fields[fields.index("-") + 1]
    return fstype == "overlay"


def written(root: str, since_ns: int, skipped: set[str], *,
            copied_up_only: bool = False) -> list[tuple[str, os.stat_result]]:
    """Every entry under `root` (on its file system) changed since `since_ns`, parents before children.
    copied_up_only: enter only directories changed since then (right on overlayfs alone: copies_up())."""
    device = os.lstat(root).st_dev
    found: list[tuple[str, os.stat_result]] = []
    pending = [root]
    while pending:
        directory = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                path = entry.path
                if path in skipped:
                    continue
                info = entry.stat(follow_symlinks=False)
                if info.st_dev != device:
                    continue
                changed = info.st_ctime_ns > since_ns
                if changed:
                    found.append((path, info))
                if stat.S_ISDIR(info.st_mode) and (changed or not copied_up_only):
                    pending.append(path)
    found.sort(key=lambda item: item[0].count("/"))
    return found


def compile_python(entries: list[tuple[str, os.stat_result]], cache: str | None) -> list[tuple[str, os.stat_result]]:
    """Byte-compile the written .py files (bytecode_cache.py), and return their .pyc files as entries too:
    an arbitrary uid cannot write __pycache__ at run time, so without them every import recompiles."""
    from bytecode_cache import compile_files  # beside this script

    sources = [path for path, info in entries if path.endswith(".py") and stat.S_ISREG(info.st_mode)]
    compile_files(sources, cache)
    compiled = (importlib.util.cache_from_source(path) for path in sources)
    return [(path, os.lstat(path)) for path in compiled if os.path.exists(path)]


def restore_attributes(path: str, info: os.stat_result) -> None:
    os.chown(path, info.st_uid, info.st_gid, follow_symlinks=False)
    os.chmod(path, stat.S_IMODE(info.st_mode))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def stage(entries: list[tuple[str, os.stat_result]], root: str, staged: str) -> None:
    """Move `entries` (under `root`) to the same places under `staged`, their directories made again."""
    directories: dict[str, os.stat_result] = {}
    top = os.path.normpath(root)

    def place(path: str) -> str:
        return staged + path[len(top.rstrip("/")):]

    def make_parents(path: str) -> None:
        parent = os.path.dirname(path)
        if parent == top or parent in directories:
            return
        make_parents(parent)
        directories[parent] = os.lstat(parent)
        os.mkdir(place(parent))

    for path, info in entries:
        make_parents(path)
        if stat.S_ISDIR(info.st_mode):
            if path not in directories:
                directories[path] = info
                os.mkdir(place(path))
        else:
            os.rename(path, place(path))
    # Deepest first, once their contents are in place (adding an entry changes a directory's mtime).
    for path in sorted(directories, key=lambda item: -item.count("/")):
        restore_attributes(place(path), directories[path])


def main() -> int:
    arguments = sys.argv[1:]
    compile_written = arguments[:1] == ["--compile"]
    staged, command = arguments[compile_written].rstrip("/"), arguments[compile_written + 1:]
    in_place = staged == "-"
    with open(MARK, "w"):
        pass
    since_ns = os.stat(MARK).st_mtime_ns
    status = subprocess.run(command, check=False).returncode
    if status != 0:
        return status
    skipped = SKIPPED if in_place else SKIPPED | {"/" + staged.split("/")[1]}  # all of it is the capture's own
    root = os.lstat("/")
    pruned = copies_up("/")
    entries = written("/", since_ns, skipped, copied_up_only=pruned)
    if compile_written:
        entries += compile_python(entries, BYTECODE_CACHE if os.path.isdir(BYTECODE_CACHE) else None)
        entries.sort(key=lambda item: item[0].count("/"))
    walked = "the directories overlayfs copied up" if pruned else "all of /"
    if in_place:
        print(f"capture-written: {len(entries)} entries written in place (walked {walked})")
        return 0
    os.makedirs(staged)
    stage(entries, "/", staged)
    restore_attributes(staged, root)  # COPY DIR/ / may give / the attributes of DIR
    print(f"capture-written: {len(entries)} entries in {staged} (walked {walked})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
