"""The container-log policy of the e2e tests: a WARNING, ERROR, CRITICAL or Python traceback line in
what a container printed fails the test that started it, unless the test allows that line by name
(`@pytest.mark.allow_log(r"regex", ...)`). Quiet logs are part of what the image promises: a warning
nobody reads today is tomorrow's bug report.

What counts as the container's log: the output of `docker run` (attached), `docker exec` and
`docker logs`, and the log of a container a test removes or stops (read just before it goes); the
same commands through rootless podman (`podman_engine.py`); and what a test hands to `scan` itself:
the streamed output of `pudev test`, the log of a container docker-compose started."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b|^Traceback \(most recent call last\):")
# docker subcommands whose output is a container's own output
OUTPUT_COMMANDS = ("run", "exec", "logs")
# docker subcommands that end a container: its log is read first
ENDING_COMMANDS = ("rm", "stop", "kill")

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def problem_lines(text: str, allowed: Iterable[re.Pattern[str]]) -> list[str]:
    """The lines of `text` that look like a warning or an error and that no allowed pattern matches."""
    patterns = list(allowed)
    return [line.strip() for line in text.splitlines()
            if PROBLEM.search(line) and not any(pattern.search(line) for pattern in patterns)]


def _names(args: Sequence[str]) -> list[str]:
    """The containers an ending command names (its arguments that are not options or their values)."""
    names, skip = [], False
    for arg in args[1:]:
        if skip:
            skip = False
        elif arg in ("--time", "-t", "--signal", "-s"):
            skip = True
        elif not arg.startswith("-"):
            names.append(arg)
    return names


@dataclass
class LogWatch:
    """Wraps pudev.engine.docker.run for one test and keeps every problem line it saw."""

    real_run: Runner
    allowed: list[re.Pattern[str]]
    found: list[str] = field(default_factory=list)

    def scan(self, origin: str, *texts: str | None) -> None:
        """Keep the problem lines of output that reached the test some other way."""
        for text in texts:
            self.found += [f"{origin}: {line}" for line in problem_lines(text or "", self.allowed)]

    def run(self, args: Sequence[str], *pargs: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        if args and args[0] in ENDING_COMMANDS:
            for name in _names(args):
                log = self.real_run(["logs", name], check=False, timeout=60)
                if log.returncode == 0:
                    self.scan(f"log of {name}", log.stdout, log.stderr)
        result = self.real_run(args, *pargs, **kwargs)
        self.after("docker", args, result)
        return result

    def after(self, engine: str, args: Sequence[str], result: subprocess.CompletedProcess[str]) -> None:
        """Scan what another engine's command printed, when it is a container's own output."""
        detached = any(flag in args for flag in ("-d", "--detach"))
        if args and args[0] in OUTPUT_COMMANDS and not (args[0] == "run" and detached):
            self.scan(f"{engine} {args[0]}", result.stdout, result.stderr)
