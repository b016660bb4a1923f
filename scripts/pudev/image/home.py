"""A usable HOME and user name for any user id, with or without the entrypoint.

Clusters start the image as an arbitrary uid (Kubernetes runAsUser, OpenShift's random
uid with gid 0, Slurm/pyxis, Apptainer) and often bypass the entrypoint. Docker then sets
HOME=/ for a uid without a passwd entry, and Jupyter, IPython, pip's cache and torch's
compile cache fail to write there. Every Python in the image runs `ensure()` at start-up
(pudev.pth), and the shells source /etc/pudev/shell/home.sh, which asks this module, so
each program finds the same HOME:

  1. $HOME, when it is a writable directory other than /, or the uid's own home from
     passwd (writable or not: a read-only root filesystem is deliberate)
  2. the passwd entry's home, when writable (root, dev)
  3. the image user's home (/home/dev), when writable through group 0 (OpenShift)
  4. /tmp/home-UID, made for this uid (mode 0700)

A uid without a passwd entry also gets USER and LOGNAME (uid-UID), because Python's
getpass.getuser(), which torch.compile's cache path uses, raises without them.

Standard library only, and cheap: the common case is one stat and one access check.
"""

from __future__ import annotations

import os
import pwd
import stat
import sys

# Every interpreter start imports this module: even `typing` (about 10 ms where nothing else
# has imported it yet) stays out; mypy reads a plain TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import MutableMapping

FALLBACK_PARENT = "/tmp"
NAME_VARIABLES = ("LOGNAME", "USER", "LNAME", "USERNAME")  # what getpass.getuser() reads


def usable(path: str) -> bool:
    return bool(path) and path != "/" and os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)


def _passwd(uid: int) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwuid(uid)
    except KeyError:
        return None


def _home_of(name: str) -> str:
    try:
        return pwd.getpwnam(name).pw_dir
    except KeyError:
        return ""


def _own_fallback(uid: int, parent: str) -> str:
    """/tmp/home-UID, created for this uid; '' when it exists but is not this uid's own directory."""
    path = os.path.join(parent, f"home-{uid}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return ""
    try:
        info = os.lstat(path)
    except OSError:
        return ""
    # Not a symlink, not someone else's: /tmp is shared, so another uid could have made it first.
    return path if stat.S_ISDIR(info.st_mode) and info.st_uid == uid and usable(path) else ""


def _keep(current: str, uid: int) -> bool:
    if usable(current):
        return True
    # The uid's own home on a read-only root filesystem is deliberate (docs/using/jupyterlab.md, a hardened run
    # mounts tmpfs folders under it): moving HOME away would bypass those mounts.
    entry = _passwd(uid) if current not in ("", "/") else None
    return entry is not None and current == entry.pw_dir and os.path.isdir(current)


def choose_home(uid: int, environ: MutableMapping[str, str], *, parent: str = FALLBACK_PARENT) -> str:
    """The HOME this uid should use; '' when nothing writable was found (HOME is then left alone)."""
    current = environ.get("HOME", "")
    if usable(current):
        return current
    entry = _passwd(uid)
    if entry is not None and usable(entry.pw_dir):
        return entry.pw_dir
    shared = _home_of(environ.get("PUDEV_USER", "")) if environ.get("PUDEV_USER") else ""
    if usable(shared):
        return shared
    return _own_fallback(uid, parent)


def ensure(environ: MutableMapping[str, str] | None = None, *, uid: int | None = None,
           parent: str = FALLBACK_PARENT) -> dict[str, str]:
    """Fix HOME (and USER/LOGNAME for a nameless uid) in `environ`; returns what changed."""
    environ = os.environ if environ is None else environ
    uid = os.getuid() if uid is None else uid
    changed: dict[str, str] = {}
    if not _keep(environ.get("HOME", ""), uid):
        home = choose_home(uid, environ, parent=parent)
        if home:
            changed["HOME"] = home
    if not any(environ.get(name) for name in NAME_VARIABLES) and _passwd(uid) is None:
        changed["USER"] = changed["LOGNAME"] = f"uid-{uid}"
    environ.update(changed)
    return changed


def _add_user_site() -> None:
    """Python chose the user's site-packages (~/.local/lib/...) from the HOME it started with,
    before site-packages' .pth files run: put the one under the new HOME where it belongs,
    before the system's, so `pip install --user` packages import in every later process."""
    import site

    if not site.ENABLE_USER_SITE:
        return
    site.USER_BASE = site.USER_SITE = None  # recomputed from the new HOME
    user_site = site.getusersitepackages()
    if not os.path.isdir(user_site) or user_site in sys.path:
        return
    before = list(sys.path)
    site.addsitedir(user_site)
    added = [path for path in sys.path if path not in before]
    system = set(site.getsitepackages())
    first_system = next((index for index, path in enumerate(before) if path in system), len(before))
    sys.path[:] = [*before[:first_system], *added, *before[first_system:]]


def add_user_bin(environ: MutableMapping[str, str]) -> None:
    """Append ~/.local/bin, where pip puts a user's commands, to PATH, as home.sh does for the shells: so a
    process started without a shell or the entrypoint (`docker exec CONTAINER pip ...`, a kernel) finds
    them too, and its environment stays the one the entrypoint gives."""
    home = environ.get("HOME", "")
    if not os.path.isabs(home):
        return
    user_bin = os.path.join(home, ".local", "bin")
    path = environ.get("PATH", "")
    if user_bin not in path.split(os.pathsep):
        environ["PATH"] = f"{path}{os.pathsep}{user_bin}" if path else user_bin


def startup() -> None:
    """Run by pudev.pth at every interpreter start: never let a bad HOME stop Python starting."""
    try:
        if "HOME" in ensure():
            _add_user_site()
        add_user_bin(os.environ)
    except Exception:  # start-up must go on whatever happens here
        return


def main(argv: list[str] | None = None) -> int:
    """`--sh`: export lines for the shells (home.sh evals them)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["--sh"]:
        print("usage: python -m pudev.image.home --sh", file=sys.stderr)
        return 2
    import shlex

    ensure()
    for name in ("HOME", "USER", "LOGNAME"):
        if os.environ.get(name):
            print(f"export {name}={shlex.quote(os.environ[name])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
