"""Registry host names as docker spells them: where a registry's API lives, how
Docker Hub's short names expand, and which hosts are this machine's own."""

from __future__ import annotations

import ipaddress

from pudev.common.imageref import ImageRef

DOCKER_HUB = "registry-1.docker.io"
# The keys docker's config.json uses for Docker Hub, newest spelling last.
DOCKER_HUB_KEYS = ("https://index.docker.io/v1/", "index.docker.io", "docker.io", DOCKER_HUB)


def api_host(domain: str) -> str:
    """Where a registry's HTTP API lives: Docker Hub's is not at docker.io."""
    return DOCKER_HUB if domain in ("", "docker.io", "index.docker.io") else domain


def registry_host(ref: ImageRef) -> str:
    return api_host(ref.domain)


def repository_path(ref: ImageRef) -> str:
    """Docker Hub's short names live under library/."""
    if registry_host(ref) == DOCKER_HUB and "/" not in ref.path:
        return f"library/{ref.path}"
    return ref.path


def hostname(host: str) -> str:
    """'127.0.0.1:5000' -> '127.0.0.1'; '[::1]:5000' -> '::1'."""
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_loopback(host: str) -> bool:
    """This machine's own addresses: docker treats them as insecure registries (plain HTTP allowed)."""
    name = hostname(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def config_key_host(key: str) -> str:
    """A config.json key as docker normalises it: 'https://ghcr.io/v2/' -> 'ghcr.io'."""
    for prefix in ("https://", "http://"):
        key = key.removeprefix(prefix)
    return key.split("/", 1)[0]
