"""A failed TLS handshake names the CA bundle the check really used (by its variable, never its
path or contents) and advice that works for it: with REQUESTS_CA_BUNDLE set, pointing SSL_CERT_FILE
somewhere changes nothing, since pudev (as requests does) reads REQUESTS_CA_BUNDLE first."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from pudev.registry import transport
from pudev.registry.client import RegistryClient

CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE")
FAILURE = ssl.SSLCertVerificationError("certificate verify failed: self-signed certificate in certificate chain")


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in CA_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "private-ca-bundle.pem"
    path.write_text("-----BEGIN CERTIFICATE-----\nTHE-BUNDLE-CONTENTS\n-----END CERTIFICATE-----\n")
    return path


def test_the_order_pudev_reads_the_variables_is_the_one_it_names() -> None:
    assert transport.CA_VARIABLES == CA_VARIABLES


def test_requests_ca_bundle_set_is_named_and_ssl_cert_file_is_not_advised(bundle: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    assert transport.ca_bundle() == str(bundle)  # the bundle the check uses: the first variable set
    message = str(RegistryClient("registry.example:5000")._tls_error(FAILURE))
    assert "TLS with registry registry.example:5000 failed" in message and "\n" not in message
    assert "$REQUESTS_CA_BUNDLE names (environment)" in message
    assert "add it to that bundle or point REQUESTS_CA_BUNDLE at one that holds it" in message
    assert "SSL_CERT_FILE also set, and not read while REQUESTS_CA_BUNDLE is" in message
    assert "point SSL_CERT_FILE" not in message
    assert str(bundle) not in message and bundle.name not in message and "THE-BUNDLE-CONTENTS" not in message


def test_ssl_cert_file_alone_is_the_bundle_named(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    message = str(transport.tls_failure("ghcr.io", FAILURE))
    assert "$SSL_CERT_FILE names (environment)" in message and "point SSL_CERT_FILE at one that holds it" in message
    assert "also set" not in message and str(bundle) not in message


def test_no_variable_set_names_certifis_bundle_and_the_variable_read_first(bundle: Path) -> None:
    message = str(transport.tls_failure("ghcr.io", FAILURE))
    assert "certifi's public bundle (none of REQUESTS_CA_BUNDLE, SSL_CERT_FILE, CURL_CA_BUNDLE is set)" in message
    assert "point REQUESTS_CA_BUNDLE at a bundle that holds it" in message and "\n" not in message
