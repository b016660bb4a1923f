"""`pudev bake`: the plans as a `docker buildx bake` file (docker-bake.json), built
as data and serialised once, for remote or clustered BuildKit builders.

Each target spells the plan's one BuildSpec, the same one `pudev build` passes to
`docker build`: labels, every build argument and the input images' digests, so an
image baked from it is tested and promoted like one `pudev build` made."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from pudev.building.plan import BuildPlan, BuildSpec
from pudev.common.errors import PudevError
from pudev.paths import REPO_ROOT

# Bake reads ${...} in JSON strings as interpolation; a literal one is written $${...}.
# A CA bundle stays a bake variable, so whoever runs bake can point it at their own. Without one the
# targets name no secret at all (with-ca.sh then adds no CA): buildx 0.20 and later refuse to read any
# file outside the working folder, /dev/null included, unless the command allows it (--allow=fs.read).
CA_VARIABLE = "CA_BUNDLE"
CA_SECRET = "id=ca,src=${" + CA_VARIABLE + "}"


def _literal(value: str) -> str:
    return value.replace("${", "$${")


def _relative(path: os.PathLike[str]) -> str:
    """Paths relative to the checkout, where the bake file is run from."""
    return os.path.relpath(path, REPO_ROOT)


def bake_target(spec: BuildSpec) -> dict[str, Any]:
    """The spec as a bake target: every field the docker command has, nothing else."""
    unresolved = [fact.name for fact in spec.pending if fact.occurs_in(spec.args.values())]
    if unresolved:
        # A bake file runs elsewhere, later: nothing fills in a placeholder there, the record would keep it.
        raise PudevError(f"{spec.tag}: {', '.join(unresolved)} not resolved; a bake target needs every digest")
    # A label only the pulling engine can know (the base's local id) is left out, never guessed.
    labels = {key: value for key, value in spec.labels.items() if not any(fact.placeholder in value
                                                                          for fact in spec.pending)}
    target: dict[str, Any] = {
        "context": _relative(spec.context),
        "dockerfile": _relative(spec.dockerfile),
        "target": spec.target,
        "platforms": [spec.platform],
        "tags": [_literal(spec.tag)],
        "args": {key: _literal(value) for key, value in spec.args.items()},
        "labels": {key: _literal(value) for key, value in sorted(labels.items())},
    }
    if spec.ca_bundle is not None:
        target["secret"] = [CA_SECRET]
    if spec.cache_from:
        target["cache-from"] = list(spec.cache_from)
    if spec.cache_to:
        target["cache-to"] = list(spec.cache_to)
    if spec.no_cache:
        target["no-cache"] = True
    return target


def bake_document(plans: Sequence[BuildPlan]) -> dict[str, Any]:
    """One target per plan and a default group holding them all."""
    specs = {plan.variant.name: plan.spec() for plan in plans}
    bundles = {str(spec.ca_bundle) for spec in specs.values() if spec.ca_bundle is not None}
    document: dict[str, Any] = {
        "group": {"default": {"targets": list(specs)}},
        "target": {name: bake_target(spec) for name, spec in specs.items()},
    }
    if bundles:
        # The plans' CA bundle (one per command) is the default; CA_BUNDLE=PATH at bake time overrides it.
        document["variable"] = {CA_VARIABLE: {"default": _literal(next(iter(bundles)))}}
    return document


def bake_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2) + "\n"


def bake_command(path: str, document: dict[str, Any]) -> list[str]:
    """How to build what the file at `path` holds: its CA bundle allowed to be read by name, as buildx asks."""
    command = ["docker", "buildx", "bake", "--file", path]
    bundle = document.get("variable", {}).get(CA_VARIABLE, {}).get("default")
    if bundle:
        command.append(f"--allow=fs.read={bundle.replace('$${', '${')}")
    return command
