"""Library versions: what the lock promised is what is installed and importable."""

from __future__ import annotations

import importlib
import importlib.metadata
from pathlib import Path

import pytest

from pudev.image.record import ImageRecord, normalize

pytestmark = pytest.mark.smoke

# import name -> distribution name, for the libraries the image advertises.
ADVERTISED = {
    "numpy": "numpy",
    "pandas": "pandas",
    "cv2": "opencv-python-headless",
    "matplotlib": "matplotlib",
    "jupyterlab": "jupyterlab",
    "tqdm": "tqdm",
    "pynvml": "nvidia-ml-py",
    "pytest": "pytest",
}


@pytest.mark.parametrize(("module", "distribution"), sorted(ADVERTISED.items()))
def test_advertised_library_imports_at_locked_version(record: ImageRecord, module: str, distribution: str) -> None:
    importlib.import_module(module)
    assert importlib.metadata.version(distribution) == record.packages[distribution]


def test_every_locked_package_is_installed_at_its_version(record: ImageRecord) -> None:
    installed = {normalize(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}
    wrong = {name: (want, installed.get(name)) for name, want in record.packages.items() if installed.get(name) != want}
    assert not wrong, f"locked vs installed: {wrong}"


def test_torch_and_torchvision_are_the_base_images(record: ImageRecord) -> None:
    import torch
    import torchvision

    assert torch.__version__.split("+")[0] == record.torch
    assert torchvision.__version__.split("+")[0] == importlib.metadata.version("torchvision").split("+")[0]
    constraints = Path("/etc/pudev/torch-constraints.txt").read_text().splitlines()
    assert f"torch=={importlib.metadata.version('torch')}" in constraints
    assert f"torchvision=={importlib.metadata.version('torchvision')}" in constraints


def test_cv2_reports_the_locked_release(record: ImageRecord) -> None:
    import cv2

    assert record.packages["opencv-python-headless"].startswith(cv2.__version__)
