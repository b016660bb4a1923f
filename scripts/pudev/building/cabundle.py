"""Which extra CA bundle a build passes to BuildKit as the secret `ca`.

An explicit --ca-bundle wins; otherwise the host's PIP_CERT, SSL_CERT_FILE or
REQUESTS_CA_BUNDLE, so a build behind a TLS-intercepting proxy works like pip
does on the same machine. The bundle is checked (a readable, non-empty PEM file
with at least one certificate), is never a build argument and never lands in a layer.
"""

from __future__ import annotations

import os
from pathlib import Path

from pudev.common.inputs import InputFile

ENVIRONMENT_VARIABLES = ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
PEM_CERTIFICATE = "-----BEGIN CERTIFICATE-----"


def _checked(source: InputFile) -> Path:
    if PEM_CERTIFICATE not in source.read_text():
        raise source.fail(f"holds no PEM certificate (no '{PEM_CERTIFICATE}' line)")
    return source.path.resolve()


def resolve_ca_bundle(explicit: str | None, *, disabled: bool = False) -> Path | None:
    if disabled:
        return None
    if explicit:
        return _checked(InputFile(Path(explicit).expanduser(), "CA bundle", "--ca-bundle",
                                  "pass a PEM file of CA certificates to --ca-bundle"))
    for variable in ENVIRONMENT_VARIABLES:
        value = os.environ.get(variable, "").strip()
        if value:
            return _checked(InputFile(Path(value).expanduser(), "CA bundle", variable,
                                      f"fix {variable} or pass --no-ca-bundle"))
    return None
