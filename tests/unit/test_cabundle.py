from __future__ import annotations

from pathlib import Path

import pytest

from pudev.building.cabundle import ENVIRONMENT_VARIABLES, resolve_ca_bundle
from pudev.common.errors import PudevError

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ENVIRONMENT_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


def test_explicit_bundle_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, environment = tmp_path / "a.pem", tmp_path / "b.pem"
    explicit.write_text(PEM)
    environment.write_text(PEM)
    monkeypatch.setenv("PIP_CERT", str(environment))
    assert resolve_ca_bundle(str(explicit)) == explicit


def test_environment_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = tmp_path / "b.pem"
    bundle.write_text(PEM)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    assert resolve_ca_bundle(None) == bundle
    assert resolve_ca_bundle(None, disabled=True) is None


def test_missing_explicit_bundle(tmp_path: Path) -> None:
    with pytest.raises(PudevError, match=r"missing.pem \(CA bundle, from --ca-bundle\): not found; pass a PEM"):
        resolve_ca_bundle(str(tmp_path / "missing.pem"))


def test_bad_bundle_from_environment_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "gone.pem"))
    with pytest.raises(PudevError, match=r"\(CA bundle, from SSL_CERT_FILE\): not found; fix SSL_CERT_FILE or pass "
                                         r"--no-ca-bundle"):
        resolve_ca_bundle(None)
    empty = tmp_path / "empty.pem"
    empty.write_text("\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(empty))
    with pytest.raises(PudevError, match=r"from SSL_CERT_FILE\): is empty"):
        resolve_ca_bundle(None)


def test_nothing_configured() -> None:
    assert resolve_ca_bundle(None) is None
