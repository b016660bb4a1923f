"""Unit tests: host logic only, no engine, no network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from matrices import WriteMatrix, write_matrix


@pytest.fixture
def matrix_file(tmp_path: Path) -> WriteMatrix:
    """Write a variant file (the synthetic matrix unless `data` is given) and return its path."""

    def write(data: dict[str, Any] | None = None, name: str = "variants.toml") -> Path:
        return write_matrix(tmp_path / name, data)

    return write
