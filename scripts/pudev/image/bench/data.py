"""A learnable synthetic image task stored as a folder of JPEG files, so the data
path (read, decode, normalise) is the real one, not in-memory tensors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def _image(label: int, classes: int, size: int, rng: np.random.Generator) -> Image.Image:
    """Class k: a hue of its own plus stripes at its own angle, under noise."""
    hue = np.array([np.cos(2 * np.pi * label / classes), np.sin(2 * np.pi * label / classes), 0.5]) * 0.35 + 0.5
    angle = np.pi * label / classes
    y, x = np.mgrid[0:size, 0:size] / size
    stripes = 0.5 + 0.5 * np.sin(12 * np.pi * (x * np.cos(angle) + y * np.sin(angle)))
    pixels = hue[None, None, :] * (0.6 + 0.4 * stripes[..., None]) + rng.normal(0, 0.08, (size, size, 3))
    return Image.fromarray((np.clip(pixels, 0, 1) * 255).astype(np.uint8))


def make_jpeg_folder(root: Path, *, images: int, size: int, classes: int, seed: int = 0) -> Path:
    """root/class_k/NNNNN.jpg; reused when a folder with the same recipe exists."""
    recipe = {"images": images, "size": size, "classes": classes, "seed": seed}
    marker = root / "recipe.json"
    if marker.exists() and json.loads(marker.read_text()) == recipe:
        return root
    rng = np.random.default_rng(seed)
    for index in range(images):
        label = index % classes
        folder = root / f"class_{label:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        _image(label, classes, size, rng).save(folder / f"{index:05d}.jpg", quality=90)
    marker.write_text(json.dumps(recipe))
    return root


def _samples(root: Path) -> list[tuple[Path, int]]:
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    return [(path, label) for label, folder in enumerate(folders) for path in sorted(folder.glob("*.jpg"))]


class JpegFolder(Dataset[tuple[Any, int]]):
    """decode="cpu": PIL decode + normalise in the loader workers (the usual pipeline).
    decode="gpu": workers only read the bytes; decode_batch() decodes a whole batch (on the GPU)."""

    def __init__(self, root: Path, *, decode: str = "cpu") -> None:
        self.samples = _samples(root)
        self.decode = decode
        self.mean = torch.tensor(MEAN).view(3, 1, 1)
        self.std = torch.tensor(STD).view(3, 1, 1)

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[Any, int]:
        path, label = self.samples[index]
        if self.decode == "gpu":
            # Plain memory, not torchvision's read_file: that tensor maps the file privately and keeps no
            # descriptor, so a loader worker cannot send it (EBADF in DupFd), and the batch never arrives.
            return torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8), label
        with Image.open(path) as image:
            array = np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0
        tensor = torch.from_numpy(array).permute(2, 0, 1)
        return (tensor - self.mean) / self.std, label


def collate_bytes(batch: list[tuple[torch.Tensor, int]]) -> tuple[list[torch.Tensor], torch.Tensor]:
    return [item[0] for item in batch], torch.tensor([item[1] for item in batch])


def decode_batch(encoded: list[torch.Tensor], device: str) -> torch.Tensor:
    """nvJPEG through torchvision: one batched decode on the GPU, then normalise there. On the CPU
    (the smoke run, which follows the same path) one image at a time: torchvision 0.19 takes no list there."""
    from torchvision.io import decode_jpeg

    decoded = decode_jpeg(encoded, device=device) if device.startswith("cuda") else [decode_jpeg(item)
                                                                                     for item in encoded]
    images = torch.stack(decoded).float().div_(255)
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    return (images - mean) / std


def batch_decode_supported(device: str) -> bool:
    """Whether decode_batch works on `device`: nvJPEG on a GPU, torchvision's libjpeg on the CPU."""
    try:
        from torchvision.io import encode_jpeg

        probe = encode_jpeg(torch.zeros(3, 8, 8, dtype=torch.uint8))
        decode_batch([probe], device)
        return True
    except (RuntimeError, TypeError, ImportError):
        return False
