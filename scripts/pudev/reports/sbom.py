"""`pudev sbom`: a CycloneDX 1.6 SBOM of an image, from what is really installed in it (the image's
`pudev inventory`: OS packages, Python and conda packages including torch's CUDA build, both CUDA
toolkits), written with cyclonedx-python-lib and checked against the format's JSON schema before
anyone sees it; pushed to the registry as an artifact that refers to the image's digest, and
fetched back by that digest."""

from __future__ import annotations

import json
from typing import Any

from cyclonedx.model import Property
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.output.json import JsonV1Dot6
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from packageurl import PackageURL

from pudev.common.errors import PudevError
from pudev.engine import docker, images
from pudev.registry.client import RegistryClient
from pudev.release import artifacts
from pudev.release.targets import CANDIDATE_PULL_HINT, DigestRef, parse_digest_ref, require_pushed

SBOM_TYPE = "application/vnd.cyclonedx+json"
SCHEMA = SchemaVersion.V1_6


def _property(name: str, value: str) -> Property:
    return Property(name=f"pudev:{name}", value=value)


def _os_packages(inventory: dict[str, Any]) -> list[Component]:
    system = inventory.get("os", {})
    distro = f"{system.get('id', '')}-{system.get('version_id', '')}".strip("-")
    found = []
    for package in inventory["dpkg"]:
        qualifiers = {"arch": package.get("arch", "")} if package.get("arch") else {}
        if distro:
            qualifiers["distro"] = distro
        purl = PackageURL(type="deb", namespace=system.get("id") or "debian", name=package["name"],
                          version=package["version"], qualifiers=qualifiers)
        found.append(Component(type=ComponentType.LIBRARY, name=package["name"], version=package["version"],
                               purl=purl, bom_ref=f"deb:{package['name']}:{package.get('arch', '')}"))
    return found


def _python_packages(inventory: dict[str, Any]) -> list[Component]:
    found = []
    for package in inventory["pip"]:
        name, version = package["name"], package["version"]
        properties = []
        if name.lower() == "torch":  # which CUDA build: what the image is for
            version = inventory["torch"]
            properties = [_property("torch:cuda", str(inventory["cuda"])),
                          _property("torch:cudnn", str(inventory.get("cudnn", "")))]
        found.append(Component(type=ComponentType.LIBRARY, name=name, version=version, properties=properties,
                               purl=PackageURL(type="pypi", name=name.lower(), version=version),
                               bom_ref=f"pypi:{name.lower()}"))
    for package in inventory.get("conda") or []:
        qualifiers = {"channel": package["channel"]} if package.get("channel") else {}
        found.append(Component(type=ComponentType.LIBRARY, name=package["name"], version=package["version"],
                               purl=PackageURL(type="conda", name=package["name"], version=package["version"],
                                               qualifiers=qualifiers),
                               bom_ref=f"conda:{package['name']}"))
    return found


def _toolkits(inventory: dict[str, Any]) -> list[Component]:
    default = inventory.get("default_toolkit", "")
    return [Component(type=ComponentType.FRAMEWORK, name="cuda-toolkit", version=toolkit["nvcc"],
                      purl=PackageURL(type="generic", namespace="nvidia", name="cuda-toolkit",
                                      version=toolkit["nvcc"]),
                      bom_ref=f"cuda-toolkit:{toolkit['version']}",
                      properties=[_property("cuda:path", toolkit["path"]),
                                  _property("cuda:release", toolkit["version"]),
                                  _property("cuda:default", "true" if toolkit["version"] == default else "false")])
            for toolkit in inventory.get("toolkits", [])]


def build_sbom(inventory: dict[str, Any], *, name: str, digest: str) -> str:
    """The SBOM as CycloneDX JSON text, schema-checked."""
    bom = Bom()
    repository, _, path = name.partition("/")
    root = Component(type=ComponentType.CONTAINER, name=name, version=digest, bom_ref="image",
                     purl=PackageURL(type="oci", name=path.rsplit("/", 1)[-1] or repository, version=digest,
                                     qualifiers={"repository_url": name}) if digest else None,
                     properties=[_property("variant", str(inventory.get("variant", ""))),
                                 _property("python", str(inventory.get("python", "")))])
    bom.metadata.component = root
    components = [*_os_packages(inventory), *_python_packages(inventory), *_toolkits(inventory)]
    seen: set[str] = set()
    for component in components:
        if str(component.bom_ref) not in seen:  # dpkg can list a package per architecture
            seen.add(str(component.bom_ref))
            bom.components.add(component)
    bom.register_dependency(root, list(bom.components))
    text = JsonV1Dot6(bom).output_as_string(indent=2)
    problem = JsonStrictValidator(SCHEMA).validate_str(text)
    if problem is not None:
        raise PudevError(f"the SBOM for {name} is not valid CycloneDX {SCHEMA.to_version()}: {problem}")
    return text


def component_versions(sbom_text: str) -> dict[str, str]:
    """purl type:name -> version, for tests and diffs."""
    data = json.loads(sbom_text)
    found = {}
    for component in data.get("components", []):
        purl = PackageURL.from_string(component["purl"])
        found[f"{purl.type}:{purl.name}"] = component.get("version", "")
    return found


# ---- the SBOM of a local image, and in the registry ----

def _local(reference: str) -> dict[str, Any]:
    """The image's inspect data; a reference by digest is pulled when it is not here."""
    if "@sha256:" in reference:
        docker.ensure_local(reference, hint=CANDIDATE_PULL_HINT)
    return images.require_image(reference)


def write_sbom(reference: str) -> str:
    """CycloneDX JSON for the image, from its own `pudev inventory`."""
    info = _local(reference)
    inventory = images.inventory(reference)
    name, _, digest = reference.partition("@")
    if not digest:  # a local tag: the digest it was last pushed under, if any
        name = name.rsplit(":", 1)[0]
        digest = next((str(item).split("@", 1)[1] for item in info.get("RepoDigests") or []), "")
    return build_sbom(inventory, name=name, digest=digest)


def registry_target(reference: str) -> tuple[DigestRef, RegistryClient]:
    ref = parse_digest_ref(reference, flag="pudev sbom")
    client = RegistryClient(ref.target.api)
    client.ping()
    require_pushed(client, ref, flag="pudev sbom")
    return ref, client


def push_sbom(reference: str, text: str) -> str:
    """Attach the SBOM to the image's digest; returns the artifact's reference."""
    ref, client = registry_target(reference)
    digest = artifacts.attach(client, ref.target.repository, ref.digest, artifact_type=SBOM_TYPE,
                              payload=text.encode(), annotations={"org.opencontainers.image.title": "sbom.cdx.json"})
    return ref.target.by_digest(digest)


def fetch_sbom(reference: str) -> str:
    """The newest SBOM attached to the image's digest."""
    ref, client = registry_target(reference)
    found = artifacts.referrers(client, ref.target.repository, ref.digest, SBOM_TYPE)
    if not found:
        raise PudevError(f"{reference} has no SBOM attached: `pudev sbom {reference} --push` attaches one")
    return artifacts.payload(client, ref.target.repository, found[-1]).decode()
