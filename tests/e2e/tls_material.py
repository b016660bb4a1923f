"""A throwaway certificate authority and one server certificate for the realistic
registry's HTTPS parts (registry, token server, storage host, proxy), written to
files so that processes (Distribution, pudev, dockerd's certs.d) can read them."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Every HTTPS part listens on 127.0.0.1; the storage host is reached as "localhost" (realistic_registry.py says why).
SERVER_NAMES: tuple[x509.GeneralName, ...] = (x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                             x509.DNSName("localhost"))


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def certificate(subject: str, key: ec.EllipticCurvePrivateKey, *, issuer: x509.Certificate | None = None,
                issuer_key: ec.EllipticCurvePrivateKey | None = None, ca: bool = False,
                names: tuple[x509.GeneralName, ...] = (), server: bool = False) -> x509.Certificate:
    """A certificate valid from an hour ago for two days; self-signed when no issuer is given."""
    now = datetime.datetime.now(datetime.timezone.utc)
    public = key.public_key()
    builder = (x509.CertificateBuilder().subject_name(_name(subject))
               .issuer_name(issuer.subject if issuer else _name(subject)).public_key(public)
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=ca, crl_sign=ca,
                                            content_commitment=False, key_encipherment=False, data_encipherment=False,
                                            key_agreement=False, encipher_only=False, decipher_only=False),
                              critical=True))
    signer = issuer_key or key
    # OpenSSL 3's strict verification (Python 3.13 default) wants the authority key identifier.
    builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()),
                                    critical=False)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
    if server:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    return builder.sign(signer, hashes.SHA256())


@dataclass(frozen=True)
class TlsMaterial:
    ca_file: Path
    cert_file: Path  # the server certificate: SAN IP:127.0.0.1 and DNS:localhost unless told other names
    key_file: Path

    @classmethod
    def create(cls, directory: Path, hosts: tuple[str, ...] = ()) -> TlsMaterial:
        directory.mkdir(parents=True, exist_ok=True)
        ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        ca = certificate("pudev test CA", ca_key, ca=True)
        names = tuple(x509.DNSName(host) for host in hosts) or SERVER_NAMES
        server = certificate(hosts[0] if hosts else "127.0.0.1", server_key, issuer=ca, issuer_key=ca_key,
                             names=names, server=True)
        material = cls(directory / "ca.crt", directory / "server.crt", directory / "server.key")
        material.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        material.cert_file.write_bytes(server.public_bytes(serialization.Encoding.PEM))
        material.key_file.write_bytes(_pem_key(server_key))
        material.key_file.chmod(0o600)
        return material  # the CA key is never written: nothing else may issue under this CA

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))
