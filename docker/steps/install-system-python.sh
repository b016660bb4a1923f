#!/bin/sh
# The distribution's Python 3 with pip and headers (extensions compile against them), for a
# `wheels` base: NVIDIA's CUDA runtime image has no Python, the official PyTorch images do.
set -eu
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086  # PUDEV_APT_CA_OPTIONS holds several words on purpose.
apt-get ${PUDEV_APT_CA_OPTIONS:-} -q update
# shellcheck disable=SC2086
apt-get ${PUDEV_APT_CA_OPTIONS:-} -q install -y --no-install-recommends ca-certificates python3 python3-dev python3-pip
rm -rf /var/log/apt/* /var/log/dpkg.log /var/cache/debconf/*-old
