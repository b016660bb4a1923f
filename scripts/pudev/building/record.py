"""The image's record as the host knows it, handed to the build as one JSON build
argument (IMAGE_RECORD). The record step in docker/Dockerfile adds what only the
build knows (each toolkit's host compiler, the user, the installed packages) and
writes /etc/pudev/image.json (pudev.image.record).

Every field of the variant and of its toolkits is recorded under its own name
(the variant's name as `variant`), so a field added to the model reaches the
image's record with no change here."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from pudev.building.input_images import InputImage
from pudev.config.model import Variant

# Not PUDEV_RECORD: a build argument is in the environment of the RUN steps after it, and
# PUDEV_RECORD there would point pudev.image.record at another record file.
RECORD_ARG = "IMAGE_RECORD"


def planned_record(variant: Variant, inputs: Iterable[InputImage], *, lock_file: str, lock_sha256: str,
                   revision: str) -> dict[str, Any]:
    """`lock_file` is the lock's file name; an input not resolved yet holds its fact's placeholder."""
    record = asdict(variant)
    record["variant"] = record.pop("name")  # image.json's name for it since the first record
    record.update(
        default_toolkit=variant.default_toolkit,
        cuda_arch_list=variant.default.arch_list,
        inputs={**{image.key: {"source": image.reference, "digest": image.pin} for image in inputs},
                "lock": {"source": f"requirements/lock/{lock_file}", "digest": f"sha256:{lock_sha256}"}},
        revision=revision,
    )
    return record


def record_json(record: dict[str, Any]) -> str:
    """One line, keys sorted: the same plan always gives the same build argument."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"))
