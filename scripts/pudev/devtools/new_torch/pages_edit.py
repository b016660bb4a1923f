"""What shows the matrix to users, after a move: the generated tables in every page (both languages),
and the image docker-compose.yml and the devcontainer start by default, which is `latest`'s."""

from __future__ import annotations

import re
from pathlib import Path

from pudev.building.plan import local_tag
from pudev.config.model import Matrix
from pudev.config.variant_table import refresh_pages

# Each names its default image once, after the variable that replaces it.
RUN_DEFINITIONS = ("docker-compose.yml", ".devcontainer/devcontainer.json")
_DEFAULT_IMAGE = re.compile(r"(\$\{(?:localEnv:)?PUDEV_IMAGE:-?)([^}]+)(\})")


def with_default_image(text: str, tag: str) -> str:
    return _DEFAULT_IMAGE.sub(lambda match: match[1] + tag + match[3], text)


def refresh(matrix: Matrix, root: Path) -> list[Path]:
    """Every page's tables and both run definitions rendered from `matrix` under `root`; the files changed."""
    changed = refresh_pages(matrix, root)
    tag = local_tag(matrix.get(matrix.default_variant))
    for name in RUN_DEFINITIONS:
        path = root / name
        if path.exists() and (text := path.read_text()) != (new := with_default_image(text, tag)):
            path.write_text(new)
            changed.append(path)
    return changed
