"""What every bad-input test of the CLI asserts: one line naming the problem, a non-zero exit, no traceback."""

from __future__ import annotations

import pytest

from pudev.cli import main


def fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code != 0
    assert "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("pudev: error: ")
    return lines[0]
