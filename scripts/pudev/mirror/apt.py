"""Point apt sources at a mirror, in both formats apt reads.

One-line format (`deb [options] URI SUITE COMPONENTS`, Ubuntu 22.04's
/etc/apt/sources.list) and deb822 stanzas (`URIs: ...`, Ubuntu 24.04 and Debian 12's
*.sources). Only the scheme and host of archives a mirror carries are rewritten;
suites, components, options and unknown repositories are kept as they are.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pudev.mirror.catalogue import Mirror

# Archive path (first URI segment) -> the same archive on a mirror.
MIRRORED_ARCHIVES = ("ubuntu", "ubuntu-ports", "debian", "debian-security")
_ONE_LINE = re.compile(r"^(?P<head>\s*deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?)(?P<uri>\S+)(?P<tail>\s+(?P<suite>\S+).*)$")


def mirrored_uri(uri: str, suite: str, mirror: Mirror, *, https: bool) -> str:
    """The mirror's URI for one archive entry, or `uri` unchanged when it stays upstream."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return uri
    archive = parts.path.strip("/").split("/")[0]
    if archive not in MIRRORED_ARCHIVES:
        return uri
    is_security = archive == "debian-security" or suite.endswith("-security")
    if is_security and mirror.apt_security_upstream:
        return uri
    base = mirror.apt_base if https else mirror.apt_base.replace("https://", "http://", 1)
    return f"{base}/{archive}/"


def rewrite_one_line(text: str, mirror: Mirror, *, https: bool) -> str:
    """Rewrite a sources.list (one entry per line); comments and blank lines are kept."""
    lines = []
    for line in text.splitlines():
        match = _ONE_LINE.match(line)
        if match:
            uri = mirrored_uri(match.group("uri"), match.group("suite"), mirror, https=https)
            lines.append(f"{match.group('head')}{uri}{match.group('tail')}")
        else:
            lines.append(line)
    return "\n".join(lines) + ("\n" if text.endswith("\n") or lines else "")


def rewrite_deb822(text: str, mirror: Mirror, *, https: bool) -> str:
    """Rewrite a .sources file. A stanza listing security and other suites is split in two
    when only the security part stays upstream, so each keeps its own server."""
    stanzas = re.split(r"\n[ \t]*\n", text.strip("\n"))
    out = [_rewrite_stanza(stanza, mirror, https=https) for stanza in stanzas if stanza.strip()]
    return "\n\n".join(out) + "\n"


def _field(stanza: str, name: str) -> str:
    match = re.search(rf"^{name}:[ \t]*(?P<value>.*)$", stanza, re.MULTILINE | re.IGNORECASE)
    return match.group("value").strip() if match else ""


def _replace_field(stanza: str, name: str, value: str) -> str:
    return re.sub(rf"^({name}:[ \t]*).*$", rf"\g<1>{value}", stanza, count=1, flags=re.MULTILINE | re.IGNORECASE)


def _rewrite_stanza(stanza: str, mirror: Mirror, *, https: bool) -> str:
    uris = _field(stanza, "URIs").split()
    suites = _field(stanza, "Suites").split()
    if not uris or not suites:
        return stanza
    groups: dict[str, list[str]] = {}
    for suite in suites:
        new_uris = " ".join(dict.fromkeys(mirrored_uri(uri, suite, mirror, https=https) for uri in uris))
        groups.setdefault(new_uris, []).append(suite)
    parts = []
    for new_uris, group_suites in groups.items():
        part = _replace_field(stanza, "URIs", new_uris)
        parts.append(_replace_field(part, "Suites", " ".join(group_suites)))
    return "\n\n".join(parts)


def uses_host(text: str, host: str) -> bool:
    """True when any entry of a sources file (either format) points at `host`."""
    return any(urlsplit(uri).netloc == host for uri in re.findall(r"[a-z]+://[^\s\]]+", text))
