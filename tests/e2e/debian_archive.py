"""A signed Debian archive for a fake mirror: one tiny package, and for every suite apt asks for an
InRelease file signed by a key made here. The key's home lives only as long as the archive is being
written (its agent is stopped and the home removed); the public key is what a container trusts.

Kinder than a real mirror: the archive is signed by this test key, which the container is told to
trust, not by Debian's."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path
from urllib.parse import urlsplit

from e2e_support import skip_or_fail

COMPONENTS = ("main", "contrib", "non-free", "non-free-firmware")


@dataclass(frozen=True)
class SigningKey:
    home: Path
    public: Path  # the armored public key, for the container to trust

    def gpg(self, *args: str) -> None:
        subprocess.run(["gpg", "--homedir", str(self.home), "--batch", "--quiet", "--pinentry-mode", "loopback",
                        "--passphrase", "", *args], check=True, capture_output=True, timeout=60)


@contextmanager
def signing_key(public: Path) -> Iterator[SigningKey]:
    """A fresh signing key, its public half written to `public`."""
    if shutil.which("gpg") is None:
        skip_or_fail("gpg is not installed (Debian's gnupg): the fake mirror's archive cannot be signed")
    # A short home: gpg-agent's socket path must fit in 108 bytes, and pytest's folders are long.
    with tempfile.TemporaryDirectory(prefix="pudev-gpg-") as home:
        key = SigningKey(Path(home), public)
        try:
            key.gpg("--quick-generate-key", "pudev test archive <archive@pudev.invalid>", "ed25519", "sign", "1d")
            key.gpg("--armor", "--export", "--output", str(public))
            yield key
        finally:
            subprocess.run(["gpgconf", "--homedir", home, "--kill", "gpg-agent"], check=False, capture_output=True,
                           timeout=60)


def _control(package: str) -> str:
    return (f"Package: {package}\nVersion: 1.0\nArchitecture: all\nMaintainer: pudev tests <archive@pudev.invalid>\n"
            "Description: a package the blocked-network test installs\n")


def _deb(folder: Path, package: str) -> Path:
    tree = folder / f"{package}-tree"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN/control").write_text(_control(package))
    (tree / f"usr/share/{package}").mkdir(parents=True)
    (tree / f"usr/share/{package}/works").write_text("yes\n")
    deb = folder / f"{package}_1.0_all.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(deb)], check=True,
                   capture_output=True, timeout=60)
    shutil.rmtree(tree)
    return deb


def _stanza(package: str, deb: Path, pool_path: str) -> str:
    data = deb.read_bytes()
    return f"{_control(package)}Filename: {pool_path}\nSize: {len(data)}\nSHA256: {hashlib.sha256(data).hexdigest()}\n"


def write_archive(root: Path, in_release_urls: list[str], architecture: str, package: str, key: SigningKey) -> None:
    """Under `root`, at each URL's own path: every suite whose InRelease apt asks for, the first one holding
    `package` (architecture all) in main, the others empty."""
    for number, url in enumerate(in_release_urls):
        dists = Path(urlsplit(url).path.lstrip("/")).parent  # e.g. debian/dists/bookworm
        archive, suite = dists.parent.parent, dists.name
        indexes: dict[str, bytes] = {f"{component}/binary-{architecture}/Packages": b"" for component in COMPONENTS}
        if number == 0:
            pool = root / archive / "pool/main/p" / package
            pool.mkdir(parents=True)
            deb = _deb(pool, package)
            indexes[f"main/binary-{architecture}/Packages"] = \
                _stanza(package, deb, str(deb.relative_to(root / archive))).encode()
        for name, data in indexes.items():
            (root / dists / name).parent.mkdir(parents=True, exist_ok=True)
            (root / dists / name).write_bytes(data)
        sums = "".join(f" {hashlib.sha256(data).hexdigest()} {len(data)} {name}\n" for name, data in indexes.items())
        (root / dists / "Release").write_text(
            f"Origin: pudev-test\nLabel: pudev-test\nSuite: {suite}\nCodename: {suite}\n"
            f"Date: {formatdate(usegmt=True)}\nArchitectures: {architecture}\nComponents: {' '.join(COMPONENTS)}\n"
            f"SHA256:\n{sums}")
        key.gpg("--clearsign", "--output", str(root / dists / "InRelease"), str(root / dists / "Release"))
