"""The token server's signing key, and the JWTs Distribution 2.8 accepts.

Distribution 2.8 (registry/auth/token/token.go, VerifySigningKey) finds the
signing key from the JWT header in this order: `x5c` (a certificate chain whose
first certificate must verify against `rootcertbundle`), `jwk`, then `kid` (a
libtrust fingerprint of a key in that bundle). We use `x5c` holding one
self-signed certificate that is also the whole `rootcertbundle`: Go's x509
verification accepts a leaf that is itself a root. Its claims: `iss` must equal
`auth.token.issuer`, `aud` must equal `auth.token.service` (a string in 2.8, not
a list), `exp`/`nbf` are checked with 60 s of leeway, and `access` lists
{type, name, actions}."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from tls_material import certificate

TOKEN_SECONDS = 300  # what Docker Hub and GHCR hand out too


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def decode_claims(token: str) -> dict[str, Any]:
    """The claims of a JWT, unverified: for tests that look at what was granted."""
    payload = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return decoded


class TokenSigner:
    def __init__(self, directory: Path, *, issuer: str, service: str) -> None:
        self.issuer, self.service = issuer, service
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.cert = certificate("pudev test token signer", self.key)
        self.cert_file = directory / "token-signer.crt"  # the registry's rootcertbundle
        directory.mkdir(parents=True, exist_ok=True)
        self.cert_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def sign(self, subject: str, access: Sequence[dict[str, Any]]) -> str:
        now = int(time.time())
        header = {"typ": "JWT", "alg": "ES256",
                  "x5c": [base64.b64encode(self.cert.public_bytes(serialization.Encoding.DER)).decode()]}
        claims = {"iss": self.issuer, "sub": subject, "aud": self.service, "exp": now + TOKEN_SECONDS, "nbf": now,
                  "iat": now, "jti": uuid.uuid4().hex, "access": list(access)}
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        # JWS ES256 wants the raw 32-byte r and s, not the DER structure cryptography returns.
        r, s = decode_dss_signature(self.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return f"{signing_input}.{_b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"
