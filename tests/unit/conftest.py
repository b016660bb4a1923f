"""Unit tests: host logic only, no engine, no network."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_digests import FakeRegistry
from matrices import HASHED_LOCK, SYNTHETIC_LOCK, WriteMatrix, write_matrix

from pudev.building import digests, requirement_locks
from pudev.engine import docker, images


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No unit test reaches a Docker engine or a registry, whatever this machine has: the docker client
    is one that does not exist (a test that fakes one sets its own), and the registry bake would ask
    does not answer (the `registry` fixture gives one that does). Planning sees what CI sees."""
    monkeypatch.setenv("PUDEV_DOCKER", str(tmp_path_factory.getbasetemp() / "no-docker-in-unit-tests"))
    unreachable = FakeRegistry()
    unreachable.down = True
    monkeypatch.setattr(digests, "registry_digest", unreachable.digest)
    caches = (docker.docker_cli, docker._can_buildkit)  # per command in real use
    for cache in caches:
        cache.cache_clear()
    docker.versions.clear()
    images.forget_inventories()
    yield
    for cache in caches:
        cache.cache_clear()
    docker.versions.clear()
    images.forget_inventories()


@pytest.fixture
def matrix_file(tmp_path: Path) -> WriteMatrix:
    """Write a variant file (the synthetic matrix unless `data` is given) and return its path."""

    def write(data: dict[str, Any] | None = None, name: str = "variants.toml") -> Path:
        return write_matrix(tmp_path / name, data)

    return write


@pytest.fixture
def lock_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """requirements/lock for one test: a copy of the real one plus the synthetic matrix's lock;
    a test adds the locks its own matrix names."""
    folder = tmp_path / "locks"
    folder.mkdir()
    for path in requirement_locks.lock_dir().glob("*.txt"):
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / SYNTHETIC_LOCK).write_text(HASHED_LOCK)
    monkeypatch.setattr(requirement_locks, "lock_dir", lambda: folder)
    return folder


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> FakeRegistry:
    """A registry bake's digest lookup reaches (a fake: unit tests have no network)."""
    fake = FakeRegistry()
    monkeypatch.setattr(digests, "registry_digest", fake.digest)
    return fake
