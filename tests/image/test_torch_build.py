"""torch is a CUDA build of the variant's CUDA version, and stays protected."""

from __future__ import annotations

import os

import pytest
import torch

from pudev.image.record import ImageRecord

pytestmark = pytest.mark.smoke


@pytest.mark.platform
def test_torch_is_a_cuda_build_of_the_variant(record: ImageRecord) -> None:
    assert torch.version.cuda == record.cuda
    assert torch.backends.cuda.is_built()
    assert torch.cuda._is_compiled()


def test_constraints_are_active_for_every_pip_install() -> None:
    assert os.environ["PIP_CONSTRAINT"] == "/etc/pudev/torch-constraints.txt"
    assert os.environ["UV_CONSTRAINT"] == "/etc/pudev/torch-constraints.txt"
