"""`pudev bake`: the matrix as a `docker buildx bake` file (docker-bake.json),
built as data and serialised once, for remote or clustered BuildKit builders."""

from __future__ import annotations

import json
from typing import Any

from pudev.build.plan import build_args, local_tag
from pudev.config.model import Matrix, Variant

# Bake reads ${...} in JSON strings as interpolation; a literal one is written $${...}.
CA_SECRET = "id=ca,src=${CA_BUNDLE}"
NO_CA_BUNDLE = "/dev/null"  # an empty secret: with-ca.sh then adds no CA


def _literal(value: str) -> str:
    return value.replace("${", "$${")


def bake_target(variant: Variant) -> dict[str, Any]:
    return {
        "context": ".",
        "dockerfile": "docker/Dockerfile",
        "target": "final",
        "platforms": [variant.platform],
        "tags": [_literal(local_tag(variant))],
        "args": {key: _literal(value) for key, value in build_args(variant).items()},
        "secret": [CA_SECRET],
    }


def bake_document(matrix: Matrix) -> dict[str, Any]:
    """One target per variant and a default group holding them all."""
    return {
        "variable": {"CA_BUNDLE": {"default": NO_CA_BUNDLE}},
        "group": {"default": {"targets": list(matrix.variants)}},
        "target": {name: bake_target(variant) for name, variant in matrix.variants.items()},
    }


def bake_json(matrix: Matrix) -> str:
    return json.dumps(bake_document(matrix), indent=2) + "\n"
