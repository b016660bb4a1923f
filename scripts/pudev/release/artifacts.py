"""OCI artifacts that refer to an image digest (OCI 1.1 `subject`): test results and
SBOMs. Listed through the referrers API, or, on registries without it (Docker
Distribution 2.8 answers 404), through the `sha256-<hex>` tag holding an index of
referrers, which this client then keeps up to date itself."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pudev.common.errors import PudevError
from pudev.registry.client import RegistryClient
from pudev.registry.oci import EMPTY_MEDIA_TYPE, OCI_INDEX, OCI_MANIFEST, content_digest

EMPTY_BLOB = b"{}"


@dataclass(frozen=True)
class Artifact:
    digest: str  # the artifact manifest's own digest
    artifact_type: str
    annotations: dict[str, str]


def fallback_tag(subject_digest: str) -> str:
    """The referrers tag schema: sha256:abc... -> sha256-abc..."""
    return subject_digest.replace(":", "-")


def _descriptor(client: RegistryClient, repository: str, digest: str) -> dict[str, Any]:
    body, media_type = client.manifest(repository, digest)
    return {"mediaType": media_type, "digest": digest, "size": len(body)}


def attach(client: RegistryClient, repository: str, subject_digest: str, *, artifact_type: str, payload: bytes,
           annotations: dict[str, str]) -> str:
    """Push `payload` as an artifact whose subject is `subject_digest`; returns the artifact's digest."""
    subject = _descriptor(client, repository, subject_digest)
    config = client.upload_blob(repository, EMPTY_BLOB)
    layer = client.upload_blob(repository, payload)
    manifest = {
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": artifact_type,
        "config": {"mediaType": EMPTY_MEDIA_TYPE, "digest": config, "size": len(EMPTY_BLOB)},
        "layers": [{"mediaType": artifact_type, "digest": layer, "size": len(payload)}],
        "subject": subject, "annotations": annotations,
    }
    body = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    digest = content_digest(body)
    answer = client.put_manifest(repository, digest, body, OCI_MANIFEST)
    if "OCI-Subject" not in answer.headers:
        # No referrers API: the client keeps the fallback index (distribution-spec 1.1).
        _add_to_fallback(client, repository, subject_digest, {
            "mediaType": OCI_MANIFEST, "digest": digest, "size": len(body), "artifactType": artifact_type,
            "annotations": annotations,
        })
    return digest


def _read_index(client: RegistryClient, repository: str, tag: str) -> dict[str, Any] | None:
    answer = client.request("GET", f"/v2/{repository}/manifests/{tag}", scope=f"repository:{repository}:pull",
                            headers={"Accept": OCI_INDEX})
    if answer.status_code == 404:
        return None
    if answer.status_code != 200:
        raise PudevError(f"{client.host}/{repository}:{tag}: reading the referrers index answered {answer.status_code}")
    index: dict[str, Any] = json.loads(answer.content)
    return index


def _add_to_fallback(client: RegistryClient, repository: str, subject_digest: str,
                     descriptor: dict[str, Any]) -> None:
    tag = fallback_tag(subject_digest)
    index = _read_index(client, repository, tag) or {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}
    if any(entry.get("digest") == descriptor["digest"] for entry in index["manifests"]):
        return
    index["manifests"].append(descriptor)
    body = json.dumps(index, sort_keys=True, separators=(",", ":")).encode()
    client.put_manifest(repository, tag, body, OCI_INDEX)


def referrers(client: RegistryClient, repository: str, subject_digest: str, artifact_type: str = "") -> list[Artifact]:
    """Artifacts whose subject is `subject_digest`, oldest first."""
    answer = client.request("GET", f"/v2/{repository}/referrers/{subject_digest}",
                            scope=f"repository:{repository}:pull", headers={"Accept": OCI_INDEX})
    if answer.status_code == 200:
        entries = json.loads(answer.content).get("manifests", [])
    elif answer.status_code == 404:
        index = _read_index(client, repository, fallback_tag(subject_digest))
        entries = [] if index is None else index.get("manifests", [])
    else:
        raise PudevError(f"{client.host}/{repository}: listing referrers of {subject_digest[:19]} answered "
                         f"{answer.status_code}")
    found = [Artifact(entry["digest"], entry.get("artifactType", ""), dict(entry.get("annotations") or {}))
             for entry in entries]
    return [item for item in found if not artifact_type or item.artifact_type == artifact_type]


def payload(client: RegistryClient, repository: str, artifact: Artifact) -> bytes:
    """The artifact's single layer, checked against its digest."""
    body, _ = client.manifest(repository, artifact.digest)
    layers = json.loads(body).get("layers", [])
    if len(layers) != 1:
        raise PudevError(f"{client.host}/{repository}@{artifact.digest[:19]}: expected one payload, found "
                         f"{len(layers)}")
    return client.get_blob(repository, layers[0]["digest"])
