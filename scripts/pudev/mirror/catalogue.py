"""The package mirrors the image can be configured for: their hosts, nothing else.

Each entry names the mirror's own hosts only. Upstream hosts are never written
here: `none` means "the base image's own settings", restored from the copy saved
at build time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mirror:
    name: str
    # Served over HTTPS with a publicly trusted certificate: pip and uv keep checking it
    # (no trusted-host / allow-insecure-host, which would turn certificate checks off).
    pypi_index: str
    # Base URL holding ubuntu/, debian/, debian-security/ archives.
    apt_base: str
    # The mirror's help page keeps the -security suites on their upstream server.
    apt_security_upstream: bool
    conda_base: str
    # A copy of torch's own wheel index (CUDA builds of torch, torchvision, torchaudio): a flat folder
    # per CUDA build (cu121/), read with `pip install -f`. '' where the mirror keeps none.
    torch_wheels: str


MIRRORS: dict[str, Mirror] = {
    "aliyun": Mirror(
        name="aliyun",
        pypi_index="https://mirrors.aliyun.com/pypi/simple/",
        apt_base="https://mirrors.aliyun.com",
        apt_security_upstream=False,
        conda_base="https://mirrors.aliyun.com/anaconda",
        torch_wheels="https://mirrors.aliyun.com/pytorch-wheels",
    ),
    "tuna": Mirror(
        name="tuna",
        pypi_index="https://pypi.tuna.tsinghua.edu.cn/simple",
        apt_base="https://mirrors.tuna.tsinghua.edu.cn",
        apt_security_upstream=True,
        conda_base="https://mirrors.tuna.tsinghua.edu.cn/anaconda",
        torch_wheels="",
    ),
}
NO_MIRROR = "none"
MIRROR_CHOICES: tuple[str, ...] = (*MIRRORS, NO_MIRROR)
