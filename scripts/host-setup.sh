#!/bin/sh
# Bring up what the full test run needs on this host, idempotently:
#   tools   debootstrap (OS stand-in), shellcheck (lint gate),
#           docker-registry (local registry for publish tests), the Docker engine,
#           docker-compose and the Dev Containers CLI (the real clients of the
#           compose file and the devcontainer)
#   engine  a running Docker daemon (started in the background when none answers)
#   tidy    drop pudev's replaced images and cap BuildKit's cache (PUDEV_BUILD_CACHE_KEEP,
#           default 25GB) so repeated runs keep their cache without filling the disk
# It installs and starts things only as root on Debian/Ubuntu; elsewhere it
# prints what is missing and how to get it, and exits non-zero.
# Usage: scripts/host-setup.sh [tools|engine|tidy|all]   (default: all)
set -eu
what=${1:-all}

say() { printf 'host-setup: %s\n' "$*" >&2; }
is_root_debian() { [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; }

ensure_tools() {
    missing=""
    command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
    command -v shellcheck >/dev/null 2>&1 || missing="$missing shellcheck"
    command -v docker-registry >/dev/null 2>&1 || missing="$missing docker-registry"
    command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
    command -v docker-compose >/dev/null 2>&1 || missing="$missing docker-compose"
    command -v npm >/dev/null 2>&1 || missing="$missing npm"
    if [ -n "$missing" ]; then
        if ! is_root_debian; then
            say "missing:$missing; install them with: sudo apt-get install -y$missing"
            return 1
        fi
        say "installing$missing"
        DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
        # shellcheck disable=SC2086  # $missing is a list of package names.
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
    fi
    ensure_devcontainer_cli
}

DEVCONTAINER_CLI_VERSION=0.89.0
ensure_devcontainer_cli() {
    if [ "$(devcontainer --version 2>/dev/null)" = "$DEVCONTAINER_CLI_VERSION" ]; then
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        say "missing: the Dev Containers CLI; install it with: sudo npm install -g @devcontainers/cli@$DEVCONTAINER_CLI_VERSION"
        return 1
    fi
    say "installing @devcontainers/cli@$DEVCONTAINER_CLI_VERSION (npm registry)"
    npm install --global --no-fund --no-audit "@devcontainers/cli@$DEVCONTAINER_CLI_VERSION" >/dev/null
}

engine_up() {
    for client in ${PUDEV_DOCKER:-} docker /usr/bin/docker; do
        if command -v "$client" >/dev/null 2>&1 && "$client" info >/dev/null 2>&1; then
            return 0
        fi
    done
    return 1
}

ensure_engine() {
    engine_up && return 0
    if [ "$(id -u)" -ne 0 ] || ! command -v dockerd >/dev/null 2>&1; then
        say "no Docker daemon answers: start one with 'sudo systemctl start docker' (or 'sudo dockerd &')"
        return 1
    fi
    log=/var/log/pudev-dockerd.log
    say "starting dockerd in the background (log: $log)"
    setsid dockerd >"$log" 2>&1 < /dev/null &
    waited=0
    until engine_up; do
        waited=$((waited + 1))
        if [ "$waited" -gt 60 ]; then
            say "dockerd did not come up within 60 s; see $log"
            return 1
        fi
        sleep 1
    done
}

tidy() {
    docker=${PUDEV_DOCKER:-docker}
    command -v "$docker" >/dev/null 2>&1 || docker=/usr/bin/docker
    for label in org.pudev.variant org.pudev.standin.recipe; do
        "$docker" image prune -f --filter "label=$label" >/dev/null
    done
    "$docker" builder prune -f --keep-storage "${PUDEV_BUILD_CACHE_KEEP:-25GB}" >/dev/null
}

case $what in
    tools) ensure_tools ;;
    engine) ensure_engine ;;
    tidy) ensure_engine && tidy ;;
    all) ensure_tools && ensure_engine && tidy ;;
    *) say "unknown step '$what': use tools, engine, tidy or all"; exit 2 ;;
esac
