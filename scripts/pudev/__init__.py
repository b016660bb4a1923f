"""PyTorch Universal Dev: build, test and publish dual-CUDA PyTorch development images.

Host side (pudev.cli and its modules) drives the Docker CLI and never imports torch.
Image side (pudev.image) runs inside the container and never touches Docker.
pudev.common is shared by both and depends on the standard library only.
"""

__version__ = "0.1.0"
