"""`pudev matrix`: the variant matrix as the CI workflow's job matrices. Builds run one
job per variant and platform, each on a runner of that platform (GitHub's hosted arm64 runners
build arm64 natively); publishing runs one job per variant, which promotes every platform's
candidate as one index."""

from __future__ import annotations

import json
from collections.abc import Collection

from pudev.common.platforms import architecture
from pudev.common.variant import as_text, travelling_values
from pudev.config.model import Matrix, Variant

# GitHub's hosted runners by platform: arm64 ones serve public repositories (a private fork may
# lack them; the workflow then leaves arm64 out, says so, and promotes amd64 alone).
RUNNERS = {"linux/amd64": "ubuntu-24.04", "linux/arm64": "ubuntu-24.04-arm"}


def _variant_fields(variant: Variant) -> dict[str, object]:
    """Each field's CI column as declared with the field (pudev.common.variant): JSON keeps a flag a
    flag (`latest`); a list becomes the comma-joined text a workflow expression can use."""
    return {contract.ci: value if isinstance(value, bool) else as_text(value)
            for _, contract, value in travelling_values(variant) if contract.ci}


def matrix_json(matrix: Matrix, *, only: Collection[str] = ()) -> str:
    """One entry per variant and platform, or only the named variants' (a profile's), in file order."""
    include = [{**_variant_fields(build), "arch": architecture(build.platform), "runner": RUNNERS[build.platform]}
               for build in matrix.every_build() if not only or build.name in only]
    return json.dumps({"include": include}, separators=(",", ":"))


def publish_json(matrix: Matrix, *, only: Collection[str] = ()) -> str:
    """One entry per variant: the platforms whose candidates its publish job promotes together."""
    include = [{**_variant_fields(variant),
                "arches": " ".join(architecture(platform) for platform in variant.platforms)}
               for variant in matrix.variants.values() if not only or variant.name in only]
    return json.dumps({"include": include}, separators=(",", ":"))
