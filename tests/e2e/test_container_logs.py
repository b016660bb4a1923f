"""The container-log policy itself (container_logs.py), with a recorded engine: no Docker needed."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence

import pytest
from container_logs import LogWatch, problem_lines


class RecordedEngine:
    """Answers docker commands from a table and remembers what it was asked."""

    def __init__(self, answers: dict[str, tuple[str, str]]) -> None:
        self.answers = answers
        self.asked: list[list[str]] = []

    def __call__(self, args: Sequence[str], *_: object, **__: object) -> subprocess.CompletedProcess[str]:
        self.asked.append(list(args))
        out, err = self.answers.get(" ".join(args), ("", ""))
        return subprocess.CompletedProcess(list(args), 0, out, err)


def test_warning_error_and_traceback_lines_are_found() -> None:
    text = "all good\nWARNING: Running pip as root\nan ERROR here\nTraceback (most recent call last):\nerror: lower"
    assert problem_lines(text, []) == ["WARNING: Running pip as root", "an ERROR here",
                                       "Traceback (most recent call last):"]


def test_an_allowed_line_is_not_a_problem() -> None:
    assert problem_lines("WARNING: Running pip as root\nERROR: other", [re.compile("as root")]) == ["ERROR: other"]


def test_the_output_of_attached_runs_exec_and_logs_is_scanned_but_not_of_builds() -> None:
    engine = RecordedEngine({"run --rm img": ("ok", "WARNING: a"), "exec c sh": ("ERROR b", ""),
                             "build .": ("WARNING: build noise", ""), "logs c": ("", "")})
    watch = LogWatch(engine, [])
    for args in (["run", "--rm", "img"], ["exec", "c", "sh"], ["build", "."]):
        watch.run(args)
    assert watch.found == ["docker run: WARNING: a", "docker exec: ERROR b"]


def test_a_container_is_read_before_it_is_removed_or_stopped() -> None:
    engine = RecordedEngine({"logs web": ("", "[E] ERROR: kernel died"), "run -d --name web img": ("id1", "")})
    watch = LogWatch(engine, [])
    watch.run(["run", "-d", "--name", "web", "img"])
    assert watch.found == [], "a detached run prints only its id"
    watch.run(["stop", "--time", "20", "web"])
    assert engine.asked[1] == ["logs", "web"] and engine.asked[2][0] == "stop"
    assert watch.found == ["log of web: [E] ERROR: kernel died"]


@pytest.mark.allow_log(r"kernel died")
def test_the_marker_allows_by_name(request: pytest.FixtureRequest) -> None:
    allowed = [re.compile(p) for marker in request.node.iter_markers("allow_log") for p in marker.args]
    watch = LogWatch(RecordedEngine({"logs web": ("ERROR: kernel died", "")}), allowed)
    watch.run(["rm", "-f", "web"])
    assert watch.found == []


def test_another_engines_runs_and_execs_are_scanned_but_not_its_detached_runs() -> None:
    watch = LogWatch(RecordedEngine({}), [])
    for args, out in ((("run", "--rm", "img"), "WARNING: a"), (("run", "-d", "img"), "WARNING: id"),
                      (("exec", "c", "sh"), "ERROR b"), (("load",), "WARNING: c")):
        watch.after("podman", args, subprocess.CompletedProcess(list(args), 0, out, ""))
    assert watch.found == ["podman run: WARNING: a", "podman exec: ERROR b"]


def test_output_handed_over_by_a_test_is_scanned() -> None:
    watch = LogWatch(RecordedEngine({}), [re.compile("^WARNING: expected$")])
    watch.scan("pudev test", "12 passed\nWARNING: expected\nCRITICAL: not expected")
    assert watch.found == ["pudev test: CRITICAL: not expected"]
