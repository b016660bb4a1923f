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

from pudev.common.errors import PudevError

TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE")
MAX_RETRY_AFTER = float(os.environ.get("PUDEV_REGISTRY_MAX_WAIT", "120"))


class CappedRetry(Retry):
    """urllib3's Retry, but a Retry-After longer than MAX_RETRY_AFTER waits only that long."""

    def get_retry_after(self, response: Any) -> float | None:
        wait = super().get_retry_after(response)
        return None if wait is None else min(wait, MAX_RETRY_AFTER)


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
