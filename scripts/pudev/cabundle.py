"""Which extra CA bundle a build passes to BuildKit as the secret `ca`.

An explicit --ca-bundle wins; otherwise the host's PIP_CERT, SSL_CERT_FILE or
REQUESTS_CA_BUNDLE, so a build behind a TLS-intercepting proxy works like pip
does on the same machine. The bundle is never a build argument and never lands
in a layer.
"""

from __future__ import annotations

import os
from pathlib import Path

from pudev.common.errors import PudevError

ENVIRONMENT_VARIABLES = ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")


def resolve_ca_bundle(explicit: str | None, *, disabled: bool = False) -> Path | None:
    if disabled:
        return None
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise PudevError(f"CA bundle {explicit} not found: pass an existing PEM file to --ca-bundle")
        return path.resolve()
    for variable in ENVIRONMENT_VARIABLES:
        value = os.environ.get(variable, "").strip()
        if value:
            path = Path(value).expanduser()
            if not path.is_file():
                raise PudevError(
                    f"CA bundle {value} (from {variable}) not found: fix {variable} or pass --no-ca-bundle"
                )
            return path.resolve()
    return None
