"""The HTTP session every registry call goes through, on `requests`/urllib3:

- TLS is always verified, against REQUESTS_CA_BUNDLE, SSL_CERT_FILE or CURL_CA_BUNDLE
  when set (the usual CA variables), else certifi's bundle;
- transient failures (connection errors, 429, 5xx) are retried by urllib3's Retry with
  backoff, and `Retry-After` is honoured on 429 and 503 (capped, so a registry cannot
  park a release for hours);
- redirects are followed, and requests drops the Authorization header when a redirect
  leaves the registry's host (GHCR and Docker Hub send blob GETs to a storage host);
  HostAuth adds it only for the registry's own host in the first place.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from pudev.common.environment import setting
from pudev.common.errors import PudevError

TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE")



class CappedRetry(Retry):
    """urllib3's Retry, but a Retry-After longer than PUDEV_REGISTRY_MAX_WAIT waits only that long."""

    def get_retry_after(self, response: Any) -> float | None:
        wait = super().get_retry_after(response)
        return None if wait is None else min(wait, float(setting("PUDEV_REGISTRY_MAX_WAIT")))


class HostAuth(requests.auth.AuthBase):
    """Authorization for requests to one host (scheme-independent) and nowhere else."""

    def __init__(self, host: str, value: str) -> None:
        self.host, self.value = host, value

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if self.value and urllib.parse.urlsplit(request.url or "").netloc == self.host:
            request.headers["Authorization"] = self.value
        return request


def ca_bundle() -> str | bool:
    """The CA file TLS is checked against: the first CA variable set, else certifi's bundle."""
    for name in CA_VARIABLES:
        path = os.environ.get(name, "")
        if path:
            if not os.path.isfile(path):
                raise PudevError(f"{name}={path} (environment): no such CA file; point it at a PEM bundle or unset it")
            return path
    return True


def tls_failure(host: str, error: Exception) -> PudevError:
    """The error for a failed TLS handshake: it names the CA bundle the check used (by its variable, never
    its path or contents), and the fix that works for that bundle; a variable read after it changes nothing."""
    used = next((name for name in CA_VARIABLES if os.environ.get(name, "")), "")
    if used:
        ignored = [name for name in CA_VARIABLES[CA_VARIABLES.index(used) + 1:] if os.environ.get(name, "")]
        also = f" ({', '.join(ignored)} also set, and not read while {used} is)" if ignored else ""
        advice = (f"the certificate was checked against the bundle ${used} names (environment){also}; if the "
                  f"registry uses a private CA, add it to that bundle or point {used} at one that holds it")
    else:
        advice = (f"the certificate was checked against certifi's public bundle (none of {', '.join(CA_VARIABLES)} is "
                  f"set); if the registry uses a private CA, point {CA_VARIABLES[0]} at a bundle that holds it")
    return PudevError(f"TLS with registry {host} failed ({error}); {advice}")


def session(retries: int, backoff: float) -> requests.Session:
    retry = CappedRetry(total=retries, connect=retries, read=retries, status=retries, other=retries,
                        allowed_methods=None, status_forcelist=TRANSIENT_STATUS, backoff_factor=backoff,
                        respect_retry_after_header=True, raise_on_status=False)
    http = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    http.mount("https://", adapter)
    http.mount("http://", adapter)
    http.headers["User-Agent"] = "pudev (registry client)"
    return http
