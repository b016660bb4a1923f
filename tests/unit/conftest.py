"""Unit tests: host logic only, no engine, no network."""

from __future__ import annotations

from pathlib import Path

import pytest

from pudev.paths import VARIANTS_FILE


@pytest.fixture
def variants_text() -> str:
    return VARIANTS_FILE.read_text()


@pytest.fixture
def write_variants(tmp_path: Path, variants_text: str):  # type: ignore[no-untyped-def]
    """Write a variant file made from the real one with `replace` edits applied."""

    def write(*replacements: tuple[str, str], append: str = "") -> Path:
        text = variants_text
        for old, new in replacements:
            assert old in text, old
            text = text.replace(old, new, 1)
        path = tmp_path / "variants.toml"
        path.write_text(text + append)
        return path

    return write
