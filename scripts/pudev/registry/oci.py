"""The OCI and Docker media types pudev reads and writes, and the content digest that names a blob
or a manifest (sha256 of its bytes), in one place."""

from __future__ import annotations

import hashlib

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
EMPTY_MEDIA_TYPE = "application/vnd.oci.empty.v1+json"
OCI_ZSTD_LAYER = "application/vnd.oci.image.layer.v1.tar+zstd"
# What a client accepts when it asks for a manifest: any of the four.
MANIFEST_TYPES = (OCI_INDEX, DOCKER_MANIFEST_LIST, DOCKER_MANIFEST, OCI_MANIFEST)


def content_digest(data: bytes) -> str:
    """"sha256:<hex>": the name a registry gives these bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()
