"""Library versions: what the lock promised is what is installed and importable."""

from __future__ import annotations

import importlib
import importlib.metadata
import site
import sysconfig
from pathlib import Path

import pytest

from pudev.common.lock_file import normalize
from pudev.image.record import ImageRecord

pytestmark = pytest.mark.smoke

# import name -> distribution name, for the libraries the image advertises.
ADVERTISED = {
    "numpy": "numpy",
    "pandas": "pandas",
    "scipy": "scipy",
    "cv2": "opencv-python-headless",
    "matplotlib": "matplotlib",
    "jupyterlab": "jupyterlab",
    "tqdm": "tqdm",
    "pynvml": "nvidia-ml-py",
    "pytest": "pytest",
    "ipykernel": "ipykernel",
    "ipywidgets": "ipywidgets",
    "PIL": "pillow",
}


@pytest.mark.parametrize(("module", "distribution"), sorted(ADVERTISED.items()))
def test_advertised_library_imports_at_locked_version(record: ImageRecord, module: str, distribution: str) -> None:
    importlib.import_module(module)
    name = normalize(distribution)
    promised = record.packages.get(name) or record.base_packages.get(name)  # the base's own copy counts too
    assert promised is not None, f"{distribution} is neither installed from the lock nor shipped by the base"
    assert importlib.metadata.version(distribution).split("+")[0] == promised.split("+")[0]


def _installed() -> dict[str, str]:
    """Each name's first copy on sys.path, the one imports get (a base may keep older copies behind it,
    and setuptools puts its vendored ones on the path once imported)."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        if dist.metadata["Name"]:
            found.setdefault(normalize(dist.metadata["Name"]), dist.version)
    return found


@pytest.mark.platform
def test_every_locked_package_is_installed_at_its_version(record: ImageRecord) -> None:
    installed = _installed()
    wrong = {name: (want, installed.get(name)) for name, want in record.packages.items() if installed.get(name) != want}
    assert not wrong, f"locked vs installed: {wrong}"


def test_nothing_but_the_lock_was_added(record: ImageRecord) -> None:
    """The package steps, each installing its part of the lock, together installed the lock (above)
    and nothing else: every package in the environment's site directories is the lock's or the base's
    (setuptools' vendored copies, on the path once it is imported, are not installed packages)."""
    places = sorted({*site.getsitepackages(), *(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))})
    found = {normalize(dist.metadata["Name"]) for dist in importlib.metadata.distributions(path=places)
             if dist.metadata["Name"]}
    extra = found - set(record.packages) - set(record.base_packages)
    assert not extra, f"installed, but neither locked nor shipped by the base: {sorted(extra)}"


def test_nothing_the_base_shipped_was_changed(record: ImageRecord) -> None:
    assert record.base_packages, "the record lists no base package: /etc/pudev/base-packages.txt was not written"
    installed = _installed()
    changed = {name: (was, installed.get(name)) for name, was in record.base_packages.items()
               if installed.get(name) != was}
    assert not changed, f"base version vs now: {changed}"
    assert not set(record.packages) & set(record.base_packages)


@pytest.mark.platform
def test_torch_and_torchvision_are_the_base_images(record: ImageRecord) -> None:
    import torch
    import torchvision

    assert torch.__version__.split("+")[0] == record.torch
    assert torchvision.__version__.split("+")[0] == importlib.metadata.version("torchvision").split("+")[0]
    constraints = Path("/etc/pudev/torch-constraints.txt").read_text().splitlines()
    assert f"torch=={importlib.metadata.version('torch')}" in constraints
    assert f"torchvision=={importlib.metadata.version('torchvision')}" in constraints


def test_cv2_reports_the_installed_release(record: ImageRecord) -> None:
    import cv2

    promised = record.packages.get("opencv-python-headless") or record.base_packages["opencv-python-headless"]
    assert promised.startswith(cv2.__version__)
