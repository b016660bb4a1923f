# Stand-in for pytorch/pytorch:2.5.1-*-runtime (up to 2.9): the same layout (Python with its headers under /opt/conda,
# WORKDIR /workspace, NVIDIA_* environment, no compiler, no /usr/local/cuda) with
# real CUDA builds of torch and torchvision from the default package index.
# The venv sees the system's (empty) site-packages only so that Python's user site stays on, as in
# conda's Python: a user who cannot write /opt/conda gets pip's user install, as on the real base.
# Built by `pudev standins` for machines that cannot reach Docker Hub; never published.
ARG OS_IMAGE
FROM ${OS_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG PYTHON_VERSION
ARG TORCH_VERSION
ARG TORCHVISION_VERSION
ARG TORCH_CUDA

RUN --mount=type=cache,target=/var/cache/apt,sharing=locked \
    --mount=type=cache,target=/var/lib/apt/lists,sharing=locked \
    apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates "python${PYTHON_VERSION}-venv" "python${PYTHON_VERSION}-dev" \
    && "python${PYTHON_VERSION}" -m venv --system-site-packages /opt/conda

ENV PATH=/opt/conda/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64 \
    PYTORCH_VERSION=${TORCH_VERSION}

RUN --mount=type=cache,target=/root/.cache/pip \
    --mount=type=secret,id=ca \
    --mount=type=bind,source=docker/steps/with-ca.sh,target=/usr/local/sbin/with-ca \
    sh /usr/local/sbin/with-ca pip install -q "torch==${TORCH_VERSION}" "torchvision==${TORCHVISION_VERSION}" \
    && python -c "import sys, torch; cuda = torch.version.cuda; print('torch', torch.__version__, 'CUDA', cuda); \
sys.exit(0 if cuda == '${TORCH_CUDA}' else f'torch ${TORCH_VERSION} is built for CUDA {cuda}, not ${TORCH_CUDA}')"

WORKDIR /workspace
