"""pudev zstd's reading of an image: where the base ends (its layers get the fast level, the project's the
hard one, and the download-size check adds up the project's), and the refusals before any work."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from memory_registry import MemoryRegistry, digest_of

from pudev.common.errors import PudevError
from pudev.paths import REPO_ROOT
from pudev.release import zstd_variant
from pudev.release.zstd_variant import (
    FIRST_OWN_LAYER,
    OCI_ZSTD_LAYER,
    RECORD_FILE,
    base_layer_count,
    convert_manifest,
    publish_zstd_tags,
)

DOCKERFILE = REPO_ROOT / "docker" / "Dockerfile"
LAYER_MAKING = ("RUN", "COPY", "ADD")


def _history(*steps: tuple[str, bool]) -> dict[str, object]:
    return {"history": [{"created_by": text, **({"empty_layer": True} if empty else {})} for text, empty in steps]}


def test_the_base_ends_before_the_first_own_layer() -> None:
    config = _history(("/bin/sh -c #(nop) ADD file:abc in /", False), ("CMD [\"bash\"]", True),
                      ("RUN pip install torch # buildkit", False), ("USER 0:0", True),
                      (f"RUN |4 CXX_STANDARD=c++17 /bin/bash -c sh {FIRST_OWN_LAYER} none # buildkit", False),
                      ("COPY /staged/packages-numerical/ / # buildkit", False))
    assert base_layer_count(config) == 2
    assert base_layer_count(_history(("RUN true", False))) is None  # not an image pudev built


def test_the_dockerfiles_first_own_layer_is_the_mark() -> None:
    """The first instruction of the final stage that makes a layer is the one the mark names: a step moved
    in front of it would be counted as the base's (compressed at the fast level, left out of the total)."""
    final = DOCKERFILE.read_text().split("AS final", 1)[1].replace("\\\n", " ")
    first = next(line for line in final.splitlines() if line.split(" ", 1)[0] in LAYER_MAKING)
    assert FIRST_OWN_LAYER in re.sub(r"--mount=\S+", "", first), first  # the command runs it, not a mount alone


@pytest.mark.parametrize(("references", "problem"), [
    ([], "give the released tags"),
    (["ghcr.io/org/image@sha256:" + "0" * 64], "not a released tag"),
    (["pytorch-universal-dev:cu121"], "not a released tag"),
    (["ghcr.io/org/image:cu121", "ghcr.io/other/image:latest"], "every tag must be in the repository"),
])
def test_bad_references_are_refused_before_the_registry_is_asked(references: list[str], problem: str) -> None:
    with pytest.raises(PudevError, match=problem):
        publish_zstd_tags(references)


def _image(registry: MemoryRegistry) -> dict[str, object]:
    """A two-layer image in the memory registry: one base layer, one of its own."""
    config = json.dumps({"rootfs": {"diff_ids": ["sha256:" + "a" * 64, "sha256:" + "b" * 64]},
                         "history": [{"created_by": "ADD base"}, {"created_by": f"RUN sh {FIRST_OWN_LAYER}"}]}).encode()
    registry.blobs[("repo", digest_of(config))] = config
    return {"config": {"digest": digest_of(config), "size": len(config)},
            "layers": [{"digest": "sha256:" + "1" * 64, "size": 10}, {"digest": "sha256:" + "2" * 64, "size": 20}]}


def test_a_layer_this_machine_converted_before_is_reused_at_its_level(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The e2e registry keeps blobs but not tags between runs: the record finds them (a 130 s conversion)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    registry = MemoryRegistry()
    manifest = _image(registry)
    kept = b"zstd bytes"
    registry.blobs[("repo", digest_of(kept))] = kept
    descriptor = {"mediaType": OCI_ZSTD_LAYER, "digest": digest_of(kept), "size": len(kept)}
    record = {f"sha256:{'a' * 64} zstd-3": descriptor, f"sha256:{'b' * 64} zstd-19": descriptor}
    (tmp_path / "pudev").mkdir()
    (tmp_path / "pudev" / RECORD_FILE).write_text(json.dumps(record))
    converted_again: list[str] = []

    def recompress(client: object, repository: str, layer: dict[str, object], diff_id: str, level: int) -> bytes:
        converted_again.append(f"{diff_id[:8]} at {level}")
        return b"new zstd bytes"

    monkeypatch.setattr(zstd_variant, "_recompress", recompress)
    monkeypatch.setattr(registry, "upload_blob", registry.put_blob, raising=False)
    _, converted, reused = convert_manifest(registry, "repo", manifest, level=12, base_level=3, earlier={})
    # The base's layer was recorded at its level (3) and is reused; the own layer only at 19, so converted at 12.
    assert (converted, reused) == (1, 1) and converted_again == ["sha256:b at 12"]
    assert f"sha256:{'b' * 64} zstd-12" in json.loads((tmp_path / "pudev" / RECORD_FILE).read_text())
