"""Image references (registry/name:tag@digest) parsed by Docker's own grammar."""

from __future__ import annotations

import re
from dataclasses import dataclass

# distribution/reference grammar, as Docker itself validates names.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"sha256:[a-f0-9]{64}"
_REFERENCE = re.compile(
    rf"^(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?$"
)
_NAME_ONLY = re.compile(rf"^(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*$")


@dataclass(frozen=True)
class ImageRef:
    """A parsed image reference. `domain` is empty for Docker Hub short names."""

    domain: str
    path: str
    tag: str
    digest: str

    @property
    def repository(self) -> str:
        return f"{self.domain}/{self.path}" if self.domain else self.path

    def __str__(self) -> str:
        text = self.repository
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def parse_image_ref(text: str) -> ImageRef | None:
    """Return the parsed reference, or None when `text` is not a valid reference."""
    match = _REFERENCE.match(text)
    if match is None or len(text) > 255 + 129 + 72:
        return None
    domain = match.group("domain") or ""
    path = match.group("path")
    # "localhost/x" and "host.name/x" are registries; "library/x" is a path on Docker Hub.
    if domain and "." not in domain and ":" not in domain and domain != "localhost":
        if not re.fullmatch(_PATH_COMPONENT, domain):
            return None  # a first component that is no registry must be a lower-case path
        path = f"{domain}/{path}"
        domain = ""
    return ImageRef(domain=domain, path=path, tag=match.group("tag") or "", digest=match.group("digest") or "")


def is_image_name(text: str) -> bool:
    """True for a repository name without tag or digest (what `image = ...` holds)."""
    return bool(_NAME_ONLY.match(text))


def reference_hint(text: str) -> str:
    """Why `text` is no image reference, where a common slip explains it (else ""): Docker wants
    repository names in lower case, and no URL scheme or white space."""
    if "://" in text:
        return "drop the URL scheme: a reference is [registry/]name[:tag]"
    if text != text.strip() or any(char.isspace() for char in text):
        return "it contains white space"
    rest, at, digest = text.partition("@")
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    name, tag = (rest[:colon], rest[colon:]) if colon > slash else (rest, "")
    first, sep, path = name.partition("/")
    is_domain = bool(sep) and ("." in first or ":" in first or first == "localhost")
    lowered = (f"{first}/{path.lower()}" if is_domain else name.lower()) + tag + at + digest
    if lowered != text and parse_image_ref(lowered) is not None:
        return f"repository names must be lower case: {lowered}"
    return ""
