"""Point apt sources at a mirror, in both formats apt reads.

One-line format (`deb [options] URI SUITE COMPONENTS`, Ubuntu 22.04's
/etc/apt/sources.list) and deb822 stanzas (`URIs: ...`, Ubuntu 24.04 and Debian 12's
*.sources). Only the scheme and host of archives a mirror carries are rewritten;
suites, components, options and unknown repositories are kept as they are.

The image's OS package step runs this file alone (bind-mounted, stdlib only, so an edit
elsewhere in pudev leaves that step cached) to point the build's own downloads at
BUILD_APT_MIRROR; `pudev plan` passes the mirror's values as build arguments.
Usage (a build step): python3 apt.py APT_BASE|"" mirror|upstream OUT_DIR
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit


class AptMirror(Protocol):
    """What apt needs of a mirror (pudev.mirror.catalogue.Mirror has it)."""

    @property
    def apt_base(self) -> str: ...

    @property
    def apt_security_upstream(self) -> bool: ...


@dataclass(frozen=True)
class BuildAptMirror:
    apt_base: str
    apt_security_upstream: bool

# Archive path (first URI segment) -> the same archive on a mirror.
MIRRORED_ARCHIVES = ("ubuntu", "ubuntu-ports", "debian", "debian-security")
_ONE_LINE = re.compile(r"^(?P<head>\s*deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?)(?P<uri>\S+)(?P<tail>\s+(?P<suite>\S+).*)$")


def mirrored_uri(uri: str, suite: str, mirror: AptMirror, *, https: bool) -> str:
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


def rewrite_one_line(text: str, mirror: AptMirror, *, https: bool) -> str:
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


def rewrite_deb822(text: str, mirror: AptMirror, *, https: bool) -> str:
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


def _rewrite_stanza(stanza: str, mirror: AptMirror, *, https: bool) -> str:
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


SECURITY_CHOICES = {"mirror": False, "upstream": True}
# Relative to an image's root: the public CAs apt trusts (Debian's and Ubuntu's ca-certificates), without
# which a mirror is reached over plain HTTP.
SYSTEM_CA_BUNDLE = "etc/ssl/certs/ca-certificates.crt"


def https_ok(root: Path) -> bool:
    """apt can only use HTTPS mirrors when the image trusts public CAs."""
    return (root / SYSTEM_CA_BUNDLE).exists()


def sources_files(root: Path) -> list[Path]:
    """An image's apt sources files, both formats: sources.list, then sources.list.d's in order."""
    etc_apt = root / "etc/apt"
    files = [etc_apt / "sources.list"] if (etc_apt / "sources.list").exists() else []
    if (etc_apt / "sources.list.d").is_dir():
        files += sorted(path for path in (etc_apt / "sources.list.d").iterdir() if path.suffix in (".list", ".sources"))
    return files


def rewrite(path: Path, text: str, mirror: AptMirror, *, https: bool) -> str:
    """A sources file's text for `mirror`, in the format its name says."""
    return (rewrite_deb822 if path.suffix == ".sources" else rewrite_one_line)(text, mirror, https=https)


def build_sources(root: Path, mirror: AptMirror | None, outdir: Path) -> list[Path]:
    """The image's sources rewritten for `mirror` (None: as they are), in outdir's sources.list and
    sources.list.d, leaving the image's own alone: it keeps them for run time."""
    (outdir / "sources.list.d").mkdir(parents=True, exist_ok=True)
    (outdir / "sources.list").touch()
    written = []
    for path in sources_files(root):
        text = path.read_text() if mirror is None else rewrite(path, path.read_text(), mirror, https=https_ok(root))
        target = outdir / ("sources.list" if path.name == "sources.list" else f"sources.list.d/{path.name}")
        target.write_text(text)
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in SECURITY_CHOICES:
        print(f"apt.py: error: expected APT_BASE (empty: the base's own) {'|'.join(SECURITY_CHOICES)} OUT_DIR,"
              f" got {argv!r}: pass BUILD_APT_MIRROR and BUILD_APT_SECURITY as `pudev plan` prints them",
              file=sys.stderr)
        return 2
    mirror = BuildAptMirror(argv[0].rstrip("/"), SECURITY_CHOICES[argv[1]]) if argv[0] else None
    how = f"through {mirror.apt_base}" if mirror else "as the base has it"
    for path in build_sources(Path("/"), mirror, Path(argv[2])):
        print(f"apt.py: {path.name}: {how}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
