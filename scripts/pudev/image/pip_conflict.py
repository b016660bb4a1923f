"""pip's report when a package wants another torch than the image's, cut to one line.

The image pins torch, torchvision and torchaudio for every pip install (PIP_CONSTRAINT, the image's
torch lock), so a package that wants another torch is refused, as it must be. But pip explains it in
a dozen lines that end with "loosen the range of package versions you've specified": wrong advice
here, since the range is the image's lock. At the start of a `pip install`, a filter on pip's resolver
logger swaps that explanation for one line naming the lock and what to do; pip's own first and last
lines stay. Any other conflict passes unchanged. Standard library only: it runs inside pip's start-up."""

from __future__ import annotations

import logging
import re

# Imported at every pip start: no `typing` (mypy reads a plain TYPE_CHECKING as true), as in home.py.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

# Where pip's resolver logs its report (pip/_internal/resolution/resolvelib/factory.py).
REPORT_LOGGER = "pip._internal.resolution.resolvelib.factory"
_PINNED = re.compile(r"The user requested \(constraint\) (?P<name>torch|torchvision|torchaudio)(?P<spec>==\S+)")
_WANTS = re.compile(r"^\s*(?P<who>\S+ \S+) depends on (?P<name>torch|torchvision|torchaudio)\b(?P<spec>\S*)",
                    re.MULTILINE)


def one_line(report: str, lock: str) -> str | None:
    """The line that replaces pip's report, or None when the image's torch lock is not what refused."""
    pinned = _PINNED.search(report)
    wants = [match for match in _WANTS.finditer(report) if match["name"] == (pinned["name"] if pinned else "")]
    if pinned is None or not wants:
        return None
    who = wants[0]["who"]
    package = who.split(" ")[0]
    wanted = wants[0]["spec"] or " (any build)"
    return (f"pudev: {who} wants {pinned['name']}{wanted}, and this image keeps {pinned['name']}{pinned['spec']} "
            f"for every pip install (its lock: {lock}, PIP_CONSTRAINT): install a release of {package} that "
            f"accepts {pinned['name']}{pinned['spec']}, or use an image tag whose torch {package} accepts")


class _TorchLockReport(logging.Filter):
    def __init__(self, lock: str) -> None:
        super().__init__()
        self.lock = lock

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            line = one_line(record.getMessage(), self.lock) if record.levelno == logging.INFO else None
        except Exception:  # pip's own report is always better than none
            return True
        if line is not None:
            record.msg, record.args = line, ()
        return True


def install(environ: Mapping[str, str]) -> None:
    """Watch pip's resolver report in this process, when the image's torch lock applies to it."""
    lock = environ.get("PIP_CONSTRAINT", "")
    if lock:
        logging.getLogger(REPORT_LOGGER).addFilter(_TorchLockReport(lock))
