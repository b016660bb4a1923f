"""`pudev matrix --json`: the variant matrix as the CI workflow's job matrices. Builds run one
job per variant and platform, each on a runner of that platform (GitHub's hosted arm64 runners
build arm64 natively); publishing runs one job per variant, which promotes every platform's
candidate as one index."""

from __future__ import annotations

import json
from collections.abc import Collection

from pudev.common.platforms import architecture
from pudev.config.model import Matrix, Variant

# GitHub's hosted runners by platform: arm64 ones serve public repositories (a private fork may
# lack them; the workflow then leaves arm64 out, says so, and promotes amd64 alone).
RUNNERS = {"linux/amd64": "ubuntu-24.04", "linux/arm64": "ubuntu-24.04-arm"}


def _variant_fields(matrix: Matrix, variant: Variant) -> dict[str, object]:
    return {"variant": variant.name, "image": variant.image, "torch": variant.torch, "cuda": variant.cuda,
            "python": variant.python, "toolkits": ",".join(variant.toolkit_versions),
            "default_toolkit": variant.default_toolkit, "latest": variant.name == matrix.default_variant}


def matrix_json(matrix: Matrix, *, only: Collection[str] = ()) -> str:
    """One entry per variant and platform, or only the named variants' (a profile's), in file order."""
    include = [{**_variant_fields(matrix, build), "platform": build.platform, "arch": architecture(build.platform),
                "runner": RUNNERS[build.platform], "base": build.base, "base_image": build.base_image}
               for build in matrix.every_build() if not only or build.name in only]
    return json.dumps({"include": include}, separators=(",", ":"))


def publish_json(matrix: Matrix, *, only: Collection[str] = ()) -> str:
    """One entry per variant: the platforms whose candidates its publish job promotes together."""
    include = [{**_variant_fields(matrix, variant), "platforms": ",".join(variant.platforms),
                "arches": " ".join(architecture(platform) for platform in variant.platforms)}
               for variant in matrix.variants.values() if not only or variant.name in only]
    return json.dumps({"include": include}, separators=(",", ":"))
