# Stand-in for nvidia/cuda:X.Y-devel: a complete CUDA toolkit in /usr/local/cuda-X.Y,
# assembled from NVIDIA's pip wheels and (11.x, 12.x: DEB_SUITE set) Debian's
# packaging of NVIDIA's compiler programs (toolkit-standins.md); 13.x from wheels alone.
# Built by `pudev standins` for machines that cannot reach NVIDIA's registry; never published.
#
# The toolkit is downloaded and unpacked on the build platform: for another platform's
# toolkit only the wheels differ, so nothing runs under emulation.
ARG OS_IMAGE
ARG BUILD_OS_IMAGE

FROM --platform=$BUILDPLATFORM ${BUILD_OS_IMAGE} AS assemble
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG TARGETARCH
ARG CUDA_VERSION
ARG WHEELS
ARG DEB_SUITE
ARG DEB_TOOLKIT_VERSION
ARG DEB_DEV_VERSION

RUN --mount=type=cache,target=/var/cache/apt,sharing=locked \
    --mount=type=cache,target=/var/lib/apt/lists,sharing=locked \
    apt-get update -q && apt-get install -y -q --no-install-recommends ca-certificates python3-pip unzip

# Downloads live only as long as this step: a stand-in is rebuilt only when its recipe changes,
# and a cache of them would stay on a fresh machine's disk for good (docs/maintaining/standins.md).
# Only the assembled tree leaves this stage.
# WHEELS is a list of requirement specs, split on purpose; pip takes the target machine's wheels,
# of any manylinux generation NVIDIA tags them with (cu11's manylinux1 to cu13's manylinux_2_28).
# The math libraries' shared objects (cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE, NPP, nvJPEG:
# most of each tree) are left out of the stand-in: torch ships its own copies and the
# production Dockerfile's prune step drops them from NVIDIA's images too, so the built image is the
# same; their headers stay. The prune step still has real work here (static libraries, NVRTC,
# CUPTI, nvJitLink), and its unit test covers the libraries left out.
RUN --mount=type=secret,id=ca \
    --mount=type=bind,source=docker/steps/with-ca.sh,target=/usr/local/sbin/with-ca \
    --mount=type=bind,source=docker/standins/fetch-debs.sh,target=/usr/local/sbin/fetch-debs \
    --mount=type=bind,source=docker/standins/assemble-toolkit.sh,target=/usr/local/sbin/assemble-toolkit \
    downloads=$(mktemp -d) \
    && machine=$([ "${TARGETARCH}" = arm64 ] && echo aarch64 || echo x86_64) \
    && set -- && for tag in manylinux1 manylinux2010 manylinux2014 $(seq -f manylinux_2_%g 17 28); do \
        set -- "$@" --platform "${tag}_${machine}"; done \
    && sh /usr/local/sbin/with-ca python3 -m pip download -q --no-cache-dir --only-binary=:all: \
        "$@" --dest "$downloads/wheels" ${WHEELS} \
    && if [ -n "${DEB_SUITE}" ]; then \
        sh /usr/local/sbin/with-ca sh /usr/local/sbin/fetch-debs "${DEB_SUITE}" "${DEB_TOOLKIT_VERSION}" \
            "${DEB_DEV_VERSION}" "$downloads/debs"; fi \
    && TOOLKIT_ROOT=/out/usr/local TARGET_ARCH="${TARGETARCH}" \
        sh /usr/local/sbin/assemble-toolkit "${CUDA_VERSION}" "$downloads/wheels" "${DEB_SUITE:+$downloads/debs}" \
    && rm -rf "$downloads" \
    && for pattern in 'libcublas*.so*' 'libcufft*.so*' 'libcurand*.so*' 'libcusolver*.so*' 'libcusparse*.so*' \
        'libnpp*.so*' 'libnvjpeg*.so*' 'libnvblas*.so*'; do \
        find /out/usr/local/ \( -type f -o -type l \) -name "$pattern" -delete; done \
    && ln -s "cuda-${CUDA_VERSION}" /out/usr/local/cuda

FROM ${OS_IMAGE}
COPY --from=assemble /out/ /
ARG CUDA_VERSION
ENV CUDA_VERSION=${CUDA_VERSION} \
    PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64 \
    LIBRARY_PATH=/usr/local/cuda/lib64/stubs \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
