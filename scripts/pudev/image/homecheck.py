"""One line naming the mount to add, where a read-only root filesystem leaves the home unwritable or on a
noexec mount: instead of JupyterLab's `OSError: [Errno 30] Read-only file system: '/home/dev/.local'`, and
before torch's traceback when it would build a C++ extension where it cannot write, or cannot load the result.

One mount makes any uid work on a read-only root: a writable, exec tmpfs at the image user's home that
belongs to the uid it runs as, `--user U:G --tmpfs /home/dev:exec,uid=U,gid=G` (Kubernetes: an emptyDir at
/home/dev, exec and world-writable as kubelet makes it). Ownership, not mode=1777: Docker's runc gives a tmpfs
mounted on a folder the image has that folder's mode (2775), whatever mode= says. home.py gives every uid that
home once it is writable (PUDEV_USER's home), so HOME, ~/.local (JupyterLab's runtime directory) and ~/.cache
(torch's extension builds, ccache) all land on it. Folders mounted under the home instead serve only the uid
they were made for: another uid's HOME falls back to /tmp/home-UID, which Docker's --tmpfs mounts noexec.

Standard library only: the extension check runs in whichever Python imports torch.utils.cpp_extension.
"""

from __future__ import annotations

import os
import pwd
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from importlib.machinery import ModuleSpec

DEFAULT_HOME = "/home/dev"
EXIT_NO_MOUNT = 2  # as runenv's bad settings: nothing to retry until the run changes
BUILD_MODULE = "torch.utils.cpp_extension"


def image_home(environ: Mapping[str, str]) -> str:
    """The image user's home (PUDEV_USER's), where the one mount goes."""
    try:
        return pwd.getpwnam(environ.get("PUDEV_USER") or "dev").pw_dir
    except KeyError:
        return DEFAULT_HOME


def _tmpfs(home: str) -> str:
    """The tmpfs to add, owned by this uid: what makes the home writable for it (the module says why)."""
    return f"{home}:exec,uid={os.getuid()},gid={os.getgid()}"


# Each message below spells its fix out in its own f-string: docs/troubleshooting*.md quote them whole, and
# tests/lint/test_quoted_messages.py finds a quote only in runs of the code's own literals.


def blocker(path: str, *, need_exec: bool = False) -> str | None:
    """Why `path` cannot be made or written (or, with need_exec, hold a library that loads); None when it can."""
    from pudev.image.compilers.launcher import existing_ancestor  # when asked: start-up never pays for it

    there = existing_ancestor(path)
    if there is None:
        return f"{path} has no folder above it"
    try:
        flags = os.statvfs(there).f_flag
    except OSError:
        flags = 0
    if not os.access(there, os.W_OK | os.X_OK):
        return (f"{there} is read-only" if flags & os.ST_RDONLY else
                f"{there} is not writable by uid {os.getuid()}")
    if need_exec and flags & os.ST_NOEXEC:
        return f"{there} is on a noexec mount, so a library built there cannot load"
    return None


def jupyter_runtime_dir(environ: Mapping[str, str]) -> str:
    """Where JupyterLab writes its server and kernel files (jupyter_core.paths.jupyter_runtime_dir)."""
    if environ.get("JUPYTER_RUNTIME_DIR"):
        return environ["JUPYTER_RUNTIME_DIR"]
    data = environ.get("JUPYTER_DATA_DIR") or os.path.join(
        environ.get("XDG_DATA_HOME") or os.path.join(environ.get("HOME", "/"), ".local", "share"), "jupyter")
    return os.path.join(data, "runtime")


def jupyter_line(environ: Mapping[str, str]) -> str | None:
    """One line when JupyterLab could not make its runtime directory (it would exit with an OSError)."""
    runtime = jupyter_runtime_dir(environ)
    why = blocker(runtime)
    home = image_home(environ)
    return None if why is None else (f"JupyterLab needs {runtime}, but {why}: add --tmpfs {_tmpfs(home)} "
                                     f"(Kubernetes: an emptyDir at {home})")


def extension_lines(environ: Mapping[str, str]) -> list[str]:
    """What torch's next extension build would hit: where it builds (writable, exec), else the compiler cache."""
    from pudev.image.compilers import launcher
    from pudev.image.compilers.compile_status import extension_build_root

    root = extension_build_root(dict(environ))
    why = blocker(root, need_exec=True)
    home = image_home(environ)
    if why is not None and environ.get("TORCH_EXTENSIONS_DIR"):
        return [f"pudev: torch builds extensions in {root}, but {why}: point TORCH_EXTENSIONS_DIR at a writable "
                f"folder without noexec, or unset it and add --tmpfs {_tmpfs(home)} (Kubernetes: an emptyDir "
                f"at {home})"]
    if why is not None:
        return [f"pudev: torch builds extensions in {root}, but {why}: add --tmpfs {_tmpfs(home)} "
                f"(Kubernetes: an emptyDir at {home})"]
    if os.access(launcher.CCACHE, os.X_OK) and launcher.cache_dir(dict(environ)) is None:
        # launcher.py then compiles uncached rather than fail: say so once, here, where the user sees it (ninja
        # shows a compiler's own output only when a build fails).
        cache = environ.get("CCACHE_DIR")
        if not cache:
            return [f"pudev: the compiler cache is off: ~/.cache/ccache is not writable, so extensions compile from "
                    f"scratch: add --tmpfs {_tmpfs(home)} (Kubernetes: an emptyDir at {home})"]
        return [f"pudev: the compiler cache is off: neither {cache} nor ~/.cache/ccache is writable, so extensions "
                f"compile from scratch: add --tmpfs {_tmpfs(home)} (Kubernetes: an emptyDir at {home}), or "
                f"mount a volume at {cache}"]
    return []


class BuildCheck:
    """A finder consulted first by every import that says, once, what would stop the extension build the
    importer is about to start; it finds nothing itself. torch.utils.cpp_extension is the cheapest hook: it is
    imported before every JIT build (load, load_inline) and every setup.py that builds one, never by `import
    torch`, and nothing else runs in every build's own process before torch's makedirs fails."""

    def __init__(self) -> None:
        self.done = False

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if self.done or name != BUILD_MODULE:
            return None
        self.done = True  # stays in sys.meta_path: removing it while importlib walks the list would skip a finder
        try:
            for line in extension_lines(os.environ):
                print(line, file=sys.stderr, flush=True)
        except Exception:  # a check, never a reason for an import to fail
            pass
        return None  # the import goes on through the other finders


def install() -> None:
    if not any(isinstance(finder, BuildCheck) for finder in sys.meta_path):
        sys.meta_path.insert(0, BuildCheck())
