# Stand-in for pytorch/pytorch:2.10+-*-runtime: the same layout (the distribution's own
# Python 3 with pip and headers, packages in /usr/local/lib/python3.X/dist-packages,
# PEP 668's EXTERNALLY-MANAGED marker, no `python` command, no conda or venv,
# WORKDIR /workspace, NVIDIA_* environment, no compiler, no /usr/local/cuda) with a
# real CUDA build of torch and torchvision from the default package index.
# Built by `pudev standins` for machines that cannot reach Docker Hub; never published.
ARG OS_IMAGE
FROM ${OS_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG TORCH_VERSION
ARG TORCHVISION_VERSION
ARG TORCH_CUDA

RUN --mount=type=cache,target=/var/cache/apt,sharing=locked \
    --mount=type=cache,target=/var/lib/apt/lists,sharing=locked \
    apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates python3 python3-dev python3-pip

ENV PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64 \
    PYTORCH_VERSION=${TORCH_VERSION}

# Fails unless the index gave the promised CUDA build (torch.version.cuda == TORCH_CUDA).
RUN --mount=type=cache,target=/root/.cache/pip \
    --mount=type=secret,id=ca \
    --mount=type=bind,source=docker/steps/with-ca.sh,target=/usr/local/sbin/with-ca \
    sh /usr/local/sbin/with-ca python3 -m pip install -q --break-system-packages \
        "torch==${TORCH_VERSION}" "torchvision==${TORCHVISION_VERSION}" \
    && python3 -c "import sys, torch; cuda = torch.version.cuda; print('torch', torch.__version__, 'CUDA', cuda); \
sys.exit(0 if cuda == '${TORCH_CUDA}' else f'torch ${TORCH_VERSION} is built for CUDA {cuda}, not ${TORCH_CUDA}')"

WORKDIR /workspace
