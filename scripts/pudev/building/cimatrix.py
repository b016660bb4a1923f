"""`pudev matrix --json`: the variant matrix as the CI workflow's job matrix."""

from __future__ import annotations

import json
from collections.abc import Collection

from pudev.config.model import Matrix


def matrix_json(matrix: Matrix, *, only: Collection[str] = ()) -> str:
    """Every variant, or only the named ones (a profile's variant), in the variant file's order."""
    include = [{"variant": v.name, "image": v.image, "torch": v.torch, "cuda": v.cuda, "python": v.python,
                "base_image": v.base_image, "toolkits": ",".join(v.toolkit_versions),
                "default_toolkit": v.default_toolkit, "latest": v.name == matrix.default_variant}
               for v in matrix.variants.values() if not only or v.name in only]
    return json.dumps({"include": include}, separators=(",", ":"))
