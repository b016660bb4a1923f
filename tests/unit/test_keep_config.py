"""`pudev keep-config`: the zstd twin skopeo wrote into an OCI layout gets the tested images' configs
back, byte for byte, so each image keeps its id; the layout's manifests and index are rewritten to
match. Refused in one line when the folder is no layout, or holds an image RELEASE does not, or when the
registry lacks or refuses RELEASE (the line names what to check: the digest, the repository, the credentials).
(The real skopeo and registry: tests/e2e/test_podman.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_registry import MANIFEST_DIGEST, fake_registry, login
from memory_registry import RELEASE, MemoryRegistry, digest_of

from pudev.cli import main
from pudev.common.errors import PudevError
from pudev.registry.client import RegistryClient
from pudev.registry.oci import DOCKER_MANIFEST, OCI_CONFIG, OCI_INDEX, OCI_MANIFEST, OCI_ZSTD_LAYER
from pudev.release import keep_config

AMD, ARM = ("sha256:" + "a" * 64, "sha256:" + "b" * 64), ("sha256:" + "c" * 64,)


def built_config(diff_ids: tuple[str, ...], arch: str) -> bytes:
    """A Docker config as `docker build` writes it: HEALTHCHECK and all (what skopeo's OCI form drops)."""
    return json.dumps({"architecture": arch, "os": "linux", "rootfs": {"type": "layers", "diff_ids": diff_ids},
                       "config": {"Healthcheck": {"Test": ["CMD", "pudev", "verify"]}, "User": "1000"}}).encode()


def skopeo_config(diff_ids: tuple[str, ...], arch: str) -> bytes:
    return json.dumps({"architecture": arch, "os": "linux", "rootfs": {"type": "layers", "diff_ids": diff_ids},
                       "config": {"User": "1000"}}).encode()


class Layout:
    """An OCI layout as `skopeo copy --all --dest-compress-format zstd docker://... oci:DIR:zstd` leaves it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "blobs" / "sha256").mkdir(parents=True)

    def put(self, data: bytes) -> dict[str, Any]:
        digest = digest_of(data)
        (self.root / "blobs" / "sha256" / digest.removeprefix("sha256:")).write_bytes(data)
        return {"digest": digest, "size": len(data)}

    def get(self, descriptor: dict[str, Any]) -> Any:
        data = (self.root / "blobs" / "sha256" / descriptor["digest"].removeprefix("sha256:")).read_bytes()
        assert digest_of(data) == descriptor["digest"] and len(data) == descriptor["size"]
        return json.loads(data)

    def image(self, diff_ids: tuple[str, ...], arch: str) -> dict[str, Any]:
        config = {"mediaType": OCI_CONFIG, **self.put(skopeo_config(diff_ids, arch))}
        layers = [{"mediaType": OCI_ZSTD_LAYER, "digest": "sha256:" + "f" * 64, "size": 1} for _ in diff_ids]
        manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": layers}
        return {"mediaType": OCI_MANIFEST, **self.put(json.dumps(manifest).encode()),
                "platform": {"architecture": arch, "os": "linux"}}

    def tag(self, descriptor: dict[str, Any]) -> None:
        top = {**descriptor, "annotations": {"org.opencontainers.image.ref.name": "zstd"}}
        (self.root / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [top]}))

    def top(self) -> dict[str, Any]:
        return dict(json.loads((self.root / "index.json").read_text())["manifests"][0])


def test_each_image_of_an_index_gets_its_own_tested_config(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    children = [layout.image(AMD, "amd64"), layout.image(ARM, "arm64")]
    layout.tag({"mediaType": OCI_INDEX, **layout.put(json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX,
                                                                  "manifests": children}).encode())})
    tested = {AMD: built_config(AMD, "amd64"), ARM: built_config(ARM, "arm64")}
    assert keep_config.apply_configs(tmp_path, tested) == 2
    top = layout.top()
    assert top["annotations"] == {"org.opencontainers.image.ref.name": "zstd"}  # skopeo still finds the tag
    index = layout.get(top)  # the index.json entry names the rewritten index
    assert [child["platform"]["architecture"] for child in index["manifests"]] == ["amd64", "arm64"]
    for child, ids in zip(index["manifests"], (AMD, ARM), strict=True):
        manifest = layout.get(child)
        assert manifest["config"] == {"mediaType": OCI_CONFIG, "digest": digest_of(tested[ids]),
                                      "size": len(tested[ids])}
        assert layout.get(manifest["config"])["config"]["Healthcheck"]  # the tested bytes, stored in the layout
        assert {layer["mediaType"] for layer in manifest["layers"]} == {OCI_ZSTD_LAYER}


def test_a_layout_with_an_image_release_does_not_hold_is_refused(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    layout.tag(layout.image(ARM, "arm64"))
    with pytest.raises(PudevError) as refused:
        keep_config.apply_configs(tmp_path, {AMD: built_config(AMD, "amd64")})
    assert "RELEASE" in str(refused.value) and "skopeo copy" in str(refused.value)
    assert str(tmp_path) in str(refused.value)


def test_the_tested_configs_are_read_from_the_release_by_their_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = MemoryRegistry()
    children = []
    for ids, arch in ((AMD, "amd64"), (ARM, "arm64")):
        config = built_config(ids, arch)
        registry.blobs[(RELEASE.repository, digest_of(config))] = config
        manifest = json.dumps({"schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
                               "config": {"digest": digest_of(config), "size": len(config)}, "layers": []}).encode()
        registry.put_manifest(RELEASE.repository, digest_of(manifest), manifest, DOCKER_MANIFEST)
        children.append({"digest": digest_of(manifest)})
    index = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": children}).encode()
    registry.put_manifest(RELEASE.repository, digest_of(index), index, OCI_INDEX)
    monkeypatch.setattr(keep_config, "RegistryClient", lambda host: registry)
    found = keep_config.tested_configs(RELEASE.by_digest(digest_of(index)))
    assert found == {AMD: built_config(AMD, "amd64"), ARM: built_config(ARM, "arm64")}


@pytest.mark.parametrize(("release", "where", "names"), [
    ("registry.example/org/dev-image:cu132", "RELEASE", ("@sha256:", "cu132")),
    (RELEASE.by_digest("sha256:" + "d" * 64), "LAYOUT", ("index.json", "skopeo copy")),
])
def test_bad_input_is_one_line_that_names_it(release: str, where: str, names: tuple[str, ...], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keep-config", release, str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and "Traceback" not in error
    assert all(name in error for name in names), error
    assert not list(tmp_path.iterdir()), "nothing written into a folder that is not a layout"


@pytest.mark.parametrize(("damage", "names"), [
    ("index-not-json", ("index.json", "not JSON")),
    ("index-a-list", ("index.json", "not a JSON object")),
    ("manifest-missing", ("lacks the blob", "incomplete")),
    ("config-missing", ("lacks the config blob", "incomplete")),
])
def test_a_damaged_layout_is_refused_before_release_is_read(damage: str, names: tuple[str, ...], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A layout skopeo did not finish (or one edited by hand) fails in one line, and nothing in it changes."""
    layout = Layout(tmp_path)
    image = layout.image(AMD, "amd64")
    layout.tag(image)
    manifest = layout.get(image)
    if damage == "index-not-json":
        (tmp_path / "index.json").write_text("{not json")
    elif damage == "index-a-list":
        (tmp_path / "index.json").write_text("[]")
    else:
        gone = image if damage == "manifest-missing" else manifest["config"]
        (tmp_path / "blobs/sha256" / gone["digest"].removeprefix("sha256:")).unlink()
    before = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    # RELEASE names a registry that does not answer: the layout's check must come first.
    assert main(["keep-config", RELEASE.by_digest("sha256:" + "d" * 64), str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and "Traceback" not in error
    assert all(name in error for name in names) and "skopeo copy" in error, error
    assert {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()} == before


# -- the registry's refusals: each names what to check (the real client, against tests/unit/fake_registry.py) --

@pytest.fixture
def docker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """docker's config in a folder of its own; no login unless a test writes one."""
    config = tmp_path / "docker-config"
    config.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    for name in ("PUDEV_REGISTRY_HOST", "PUDEV_REGISTRY_USERNAME", "PUDEV_REGISTRY_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    return config



def _layout(folder: Path) -> Path:
    layout = Layout(folder)
    layout.tag(layout.image(AMD, "amd64"))
    return folder


@pytest.mark.parametrize(("user", "names"), [
    ("pusher", ("RELEASE", "no image sha256:dddd", "team/img", "digest", "repository", "skopeo inspect")),
    (None, ("RELEASE", "team/img", "credentials", "docker login", "permissions")),
])
def test_a_release_the_registry_lacks_or_refuses_names_what_to_check(
        user: str | None, names: tuple[str, ...], tmp_path: Path, docker_config: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A digest the registry lacks (404), or a registry that refuses the request (401: no login): one line that
    names the digest, the repository and the credentials to check, not `registry answered 404`; the layout is
    left as it was."""
    layout = _layout(tmp_path / "layout")
    before = {path: path.read_bytes() for path in layout.rglob("*") if path.is_file()}
    with fake_registry() as (address, _):
        if user:
            login(docker_config, address, user, "s3cret")
        assert main(["keep-config", f"{address}/team/img@sha256:{'d' * 64}", str(layout)]) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and "Traceback" not in error, error
    assert all(name in error for name in names), error
    assert "registry answered 404" not in error and str(docker_config) not in error and "s3cret" not in error
    assert {path: path.read_bytes() for path in layout.rglob("*") if path.is_file()} == before


@pytest.mark.parametrize(("call", "names"), [
    ("manifest", ("team/img@sha256:dddd", "HTTP 404", "repository", "tag or digest", "skopeo inspect")),
    ("tag", ("team/img", "HTTP 401", "credentials", "permissions", "write:packages")),
    ("anonymous", ("team/img", "anonymous", "credentials", "docker login")),
])
def test_every_registry_refusal_names_what_to_check(call: str, names: tuple[str, ...], docker_config: Path) -> None:
    """The client's own words, whichever command asked: what is missing or refused, and what to check; never
    the secret, nor the path of docker's config."""
    with fake_registry() as (address, _):
        if call != "anonymous":
            login(docker_config, address, "reader", "r3ad")  # may pull, may not push
        client = RegistryClient(address, retries=0)
        with pytest.raises(PudevError) as refused:
            if call == "tag":
                client.tag("team/img", MANIFEST_DIGEST, "latest")
            else:
                client.manifest("team/img", "sha256:" + "d" * 64 if call == "manifest" else "v1")
    message = str(refused.value)
    assert "\n" not in message and all(name in message for name in names), message
    assert "r3ad" not in message and str(docker_config) not in message
