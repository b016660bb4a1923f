# The yardstick `make bench-build` measures the real build against (never shipped): the
# single-stage Dockerfile a newcomer would write for the same image. It copies both toolkits
# as their images hold them (unpruned), installs the same OS packages with apt (the older g++ a
# toolkit's nvcc needs among them, where the image has one) and the same lock with pip (no cache
# mount: pip's cache lands in a layer), and cleans up in a separate layer, which frees nothing.
# The CA secret is mounted only because this machine's proxy needs it, as the real build does.
ARG BASE_IMAGE
ARG TOOLKIT_A_IMAGE
ARG TOOLKIT_B_IMAGE
FROM ${TOOLKIT_A_IMAGE} AS toolkit-a
FROM ${TOOLKIT_B_IMAGE} AS toolkit-b

FROM ${BASE_IMAGE}
USER 0:0
ARG TOOLKIT_A_VERSION
ARG TOOLKIT_B_VERSION
COPY --from=toolkit-a /usr/local/cuda-${TOOLKIT_A_VERSION} /usr/local/cuda-${TOOLKIT_A_VERSION}
COPY --from=toolkit-b /usr/local/cuda-${TOOLKIT_B_VERSION} /usr/local/cuda-${TOOLKIT_B_VERSION}
ARG OS_PACKAGES
RUN --mount=type=secret,id=ca --mount=type=bind,source=docker/steps/with-ca.sh,target=/with-ca.sh \
    sh /with-ca.sh sh -c 'apt-get $PUDEV_APT_CA_OPTIONS update \
        && DEBIAN_FRONTEND=noninteractive apt-get $PUDEV_APT_CA_OPTIONS install -y --no-install-recommends $OS_PACKAGES'
ARG LOCK
COPY requirements/lock/${LOCK} /tmp/requirements.txt
# What pip's own error asks for on a system-Python base (PEP 668).
ENV PIP_BREAK_SYSTEM_PACKAGES=1
RUN --mount=type=secret,id=ca --mount=type=bind,source=docker/steps/with-ca.sh,target=/with-ca.sh \
    sh /with-ca.sh python3 -m pip install -r /tmp/requirements.txt
RUN rm -rf /var/lib/apt/lists/* /root/.cache/pip /tmp/requirements.txt
