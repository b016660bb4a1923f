#!/bin/sh
# The PyTorch base, made where no official image exists for the platform (pytorch/pytorch's
# CUDA tags are linux/amd64 only): NVIDIA's CUDA runtime image plus the distribution's Python 3
# (with pip and headers, for extensions) and torch's own wheels, the way pytorch's Dockerfile
# makes its images. torch and torchvision come from TORCH_INDEX (PyTorch's index for the
# variant's CUDA), or from pip's default index when it is empty; torchvision is left to pip,
# which picks the release that requires exactly this torch.
# Usage: torch-from-wheels.sh TORCH_VERSION [TORCH_INDEX]
set -eu
torch_version=$1
index=${2:-}

export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086  # PUDEV_APT_CA_OPTIONS holds several words on purpose.
apt-get ${PUDEV_APT_CA_OPTIONS:-} -q update
# shellcheck disable=SC2086
apt-get ${PUDEV_APT_CA_OPTIONS:-} -q install -y --no-install-recommends ca-certificates python3 python3-dev python3-pip
rm -rf /var/log/apt/* /var/log/dpkg.log /var/cache/debconf/*-old

set --
if [ -n "$index" ]; then set -- --index-url "$index"; fi
# PEP 668 bases (Ubuntu 24.04, Debian 12) mark the system Python as externally managed; like the
# official images, packages go to /usr/local. Older pips ignore the variable, and need no override.
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-warn-script-location "$@" \
    "torch==$torch_version" torchvision
