"""kept_between_runs: the kept registry's storage, through Distribution's own garbage-collect and API
(processes only, no engine), and the layer listings kept by image id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import kept_between_runs
import pytest
from realistic_registry import RealisticRegistry

from pudev.engine import docker
from pudev.engine.layers import Layer
from pudev.registry.client import RegistryClient
from pudev.registry.oci import OCI_MANIFEST, content_digest

CANDIDATES, RELEASE = "org/app-candidates", "org/app"
needs_registry = pytest.mark.skipif(shutil.which("docker-registry") is None,
                                    reason="docker-registry is not installed (sudo apt-get install docker-registry)")


def _push(client: RegistryClient, repository: str, layer: str, config: str) -> str:
    body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                       "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config,
                                  "size": 2},
                       "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer,
                                   "size": 7}]}).encode()
    client.put_manifest(repository, "cu121", body, OCI_MANIFEST)
    return content_digest(body)


@needs_registry
def test_a_run_starts_from_no_image_with_the_last_runs_blobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = RealisticRegistry(tmp_path / "registry", storage=tmp_path / "storage")
    for name, value in registry.env().items():
        monkeypatch.setenv(name, value)
    kept_between_runs.collect_garbage(registry)  # the first run: nothing kept yet
    with registry:
        client = RegistryClient(registry.address)
        # The last run: a candidate, the same image promoted by mounting its blobs, and a blob nothing names.
        layer, config = client.upload_blob(CANDIDATES, b"a layer"), client.upload_blob(CANDIDATES, b"{}")
        client.upload_blob(CANDIDATES, b"an upload that no manifest names")
        manifest = _push(client, CANDIDATES, layer, config)
        assert client.mount_blob(RELEASE, layer, CANDIDATES) and client.mount_blob(RELEASE, config, CANDIDATES)
        _push(client, RELEASE, layer, config)
        registry.stop_registry()
        blobs = registry.blob_count()
        # This run, as the kept_registry fixture starts it.
        kept_between_runs.collect_garbage(registry)
        assert registry.blob_count() == blobs - 1, "garbage-collect drops the blob no manifest names, and only it"
        registry.start_registry()
        kept_between_runs.forget_images(registry)
        for repository in (CANDIDATES, RELEASE):
            assert client.list_tags(repository) == [] and client.digest(repository, manifest) is None
        assert client.blob_exists(CANDIDATES, layer), "a candidate repository keeps its layers: a push skips them"
        assert not client.blob_exists(RELEASE, layer), "promote must mount every layer again"
        # A run that pushed nothing leaves nothing for the next one.
        registry.stop_registry()
        kept_between_runs.collect_garbage(registry)
        assert registry.blob_count() == 0


def test_storage_over_the_limit_is_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = RealisticRegistry(tmp_path / "registry", storage=tmp_path / "storage")
    (tmp_path / "storage/docker").mkdir(parents=True)
    (tmp_path / "storage/docker/blob").write_bytes(b"four")
    monkeypatch.setattr(kept_between_runs, "LIMIT_BYTES", 3)
    kept_between_runs.collect_garbage(registry)
    assert not (tmp_path / "storage").exists()


def test_the_folder_follows_the_cache_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUDEV_TEST_CACHE", str(tmp_path / "cache"))
    assert kept_between_runs.kept_storage_dir() == tmp_path / "cache" / "registry-storage"
    monkeypatch.delenv("PUDEV_TEST_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kept_between_runs.kept_storage_dir() == tmp_path / "xdg" / "pudev-tests" / "registry-storage"


def test_a_layer_listing_is_read_once_per_image_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUDEV_TEST_CACHE", str(tmp_path))
    reads: list[str] = []
    listing = [Layer(0, {"/a": 3}, ["/b"], ["/c"], 0o755)]

    def read(image: str) -> list[Layer]:
        reads.append(image)
        return listing

    monkeypatch.setattr(kept_between_runs, "read_layers", read)
    monkeypatch.setattr(docker, "image_id", lambda image: "sha256:" + "1" * 64)
    for _ in range(2):
        assert kept_between_runs.layers_by_id("img:tag", "sha256:" + "1" * 64) == listing
    assert reads == ["img:tag"]
    monkeypatch.setattr(docker, "image_id", lambda image: "sha256:" + "2" * 64)
    with pytest.raises(AssertionError, match="moved to another image"):
        kept_between_runs.layers_by_id("img:tag", "sha256:" + "3" * 64)
