"""A CycloneDX 1.6 SBOM of an image, from what is really installed in it (the
image's `pudev inventory`: OS packages, Python and conda packages including
torch's CUDA build, both CUDA toolkits), written with cyclonedx-python-lib and
checked against the format's JSON schema before anyone sees it."""

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
