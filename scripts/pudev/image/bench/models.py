"""The models the ladder trains, randomly initialised."""

from __future__ import annotations

from torch import nn


def tiny_convnet(classes: int) -> nn.Module:
    """The smoke configuration's model: seconds to compile on a CPU."""

    class Tiny(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
            )
            self.head = nn.Linear(32, classes)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.head(self.features(x).flatten(1))

    return Tiny()


def build_model(name: str, classes: int) -> nn.Module:
    from torchvision import models

    if name == "resnet50":
        return models.resnet50(weights=None, num_classes=classes)
    if name == "vit_b_16":
        return models.vit_b_16(weights=None, num_classes=classes)
    if name == "tiny":
        return tiny_convnet(classes)
    raise ValueError(f"unknown model {name!r}: choose resnet50, vit_b_16 or tiny")


CONV_NETS = {"resnet50", "tiny"}
