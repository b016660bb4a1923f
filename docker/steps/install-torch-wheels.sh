#!/bin/sh
# torch and torchvision for a `wheels` base (pytorch/pytorch's CUDA tags are linux/amd64 only),
# installed on the BUILD platform for the TARGET one: only the wheels differ between the two, so
# the installer never runs under emulation. The build-platform image is the same OS release as the
# base, so the same Python: the files go where that Python's pip puts them (/usr/local, as in the
# official images), byte-compiled there, then move under OUT for one COPY into the base.
# torch comes from TORCH_INDEX (PyTorch's index for the variant's CUDA), or from the default index
# when it is empty; torchvision is left to uv, which picks the release that requires this torch.
# Usage: install-torch-wheels.sh TARGETARCH TORCH_VERSION TORCH_INDEX OUT
set -eu
arch=$1
torch_version=$2
index=$3
out=$4

export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086  # PUDEV_APT_CA_OPTIONS holds several words on purpose.
apt-get ${PUDEV_APT_CA_OPTIONS:-} -q update
# shellcheck disable=SC2086
apt-get ${PUDEV_APT_CA_OPTIONS:-} -q install -y --no-install-recommends ca-certificates python3 python3-pip

# uv, pinned and hashed in the build-tools lock, beside this step only.
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --disable-pip-version-check --no-deps --require-hashes \
    --target /tmp/uv -r /tmp/build-tools.txt

case $arch in
    arm64) wheel_platform=aarch64-manylinux_2_28 ;;
    amd64) wheel_platform=x86_64-manylinux_2_28 ;;
    *) echo "install-torch-wheels: no torch wheels for $arch" >&2; exit 1 ;;
esac
site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
set --
if [ -n "$index" ]; then set -- --index-url "$index"; fi
UV_NO_CONFIG=1 /tmp/uv/bin/uv pip install --quiet --python "$(command -v python3)" \
    --python-platform "$wheel_platform" --only-binary :all: --compile-bytecode --target "$site" \
    "$@" "torch==$torch_version" torchvision

mkdir -p "$out$site" "$out/usr/local/bin"
if [ -d "$site/bin" ]; then mv "$site"/bin/* "$out/usr/local/bin/" && rmdir "$site/bin"; fi
mv "$site"/* "$out$site/"
