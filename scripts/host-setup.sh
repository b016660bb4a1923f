#!/bin/sh
# Bring up what the full test run needs on this host, idempotently:
#   tools   debootstrap (OS stand-in), shellcheck (lint gate),
#           qemu-user-static and binfmt-support (the arm64 stand-in builds and runs here
#           under emulation; binfmt_misc mounted and its handlers enabled),
#           docker-registry (local registry for publish tests), skopeo (the zstd copy, as the
#           workflow makes it), chromium, chromium-driver and a CJK font (JupyterLab and the
#           docs site opened in a real headless browser), the Docker engine,
#           docker-compose and the Dev Containers CLI (the real clients of the
#           compose file and the devcontainer)
#   engine  a running Docker daemon (started in the background when none answers)
#   podman  Debian's podman for a rootless second engine: a dedicated non-root user
#           ($PUDEV_PODMAN_USER, default pudev-podman) with subordinate id ranges and
#           its own storage.conf (native overlay, never vfs); the Docker engine's
#           configuration is left alone. `all` does this only where asked to (below).
#   tidy    drop pudev's own replaced images (by their labels); cap BuildKit's cache only
#           where asked to, since it holds every project's builds on this engine and has no
#           per-project scope; otherwise stop when Docker's disk has too little free
# What changes the host beyond installing packages happens only under CI=true or an opt-in:
#   PUDEV_CREATE_PODMAN_USER=1  `all` creates the podman user (its tests skip without it)
#   PUDEV_PRUNE_BUILD_CACHE=1   `tidy` cuts the build cache to PUDEV_BUILD_CACHE_KEEP (10GB), after
#                               dropping records unused for PUDEV_BUILD_CACHE_UNUSED_FOR (a duration) if set
#   PUDEV_TEST_DISK_GB          the free space a warm run needs (25) when nothing is pruned
#   PUDEV_FIRST_RUN_DISK_GB     the same for a first run, on an engine with no stand-in yet (70)
# It installs and starts things only as root on Debian/Ubuntu; elsewhere it
# prints what is missing and how to get it, and exits non-zero.
# Usage: scripts/host-setup.sh [tools|engine|podman|tidy|all]   (default: all)
set -eu
what=${1:-all}

say() { printf 'host-setup: %s\n' "$*" >&2; }
is_root_debian() { [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; }

ensure_tools() {
    missing=""
    command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
    command -v shellcheck >/dev/null 2>&1 || missing="$missing shellcheck"
    command -v docker-registry >/dev/null 2>&1 || missing="$missing docker-registry"
    command -v skopeo >/dev/null 2>&1 || missing="$missing skopeo"
    command -v gpg >/dev/null 2>&1 || missing="$missing gnupg"  # signs the blocked-network test's apt archive
    command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
    command -v docker-compose >/dev/null 2>&1 || missing="$missing docker-compose"
    command -v npm >/dev/null 2>&1 || missing="$missing npm"
    command -v qemu-aarch64-static >/dev/null 2>&1 || missing="$missing qemu-user-static"
    command -v update-binfmts >/dev/null 2>&1 || missing="$missing binfmt-support"
    command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
    command -v chromedriver >/dev/null 2>&1 || missing="$missing chromium-driver"
    # The Chinese docs' screenshots: without a CJK font, headless chromium draws boxes.
    [ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || missing="$missing fonts-wqy-microhei"
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
    ensure_devcontainer_cli && ensure_emulation && ensure_buildx
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

# Another platform's programs (the arm64 stand-in) run through the kernel's binfmt handlers, registered
# with the F flag so they work inside containers too. torch 2.15's aarch64 build crashes at import
# under qemu older than 9 (Debian 12 ships 7.2; Debian 13's 10.0 runs it), so an older emulator is
# replaced by Debian 13's static qemu-aarch64, fetched through the host's own Debian archive entry.
QEMU_MIN_MAJOR=9
QEMU_NEWER=/usr/local/lib/pudev/qemu-aarch64
ensure_emulation() {
    [ "$(uname -m)" = "aarch64" ] && return 0
    if ! is_root_debian; then
        [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || [ -e /proc/sys/fs/binfmt_misc/pudev-qemu-aarch64 ] && return 0
        say "missing: an arm64 emulator; run: sudo apt-get install -y qemu-user-static binfmt-support"
        return 1
    fi
    [ -e /proc/sys/fs/binfmt_misc/status ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    if [ -e /proc/sys/fs/binfmt_misc/pudev-qemu-aarch64 ]; then return 0; fi
    update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
    interpreter=$(sed -n 's/^interpreter //p' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null)
    major=$("$(readlink -f "${interpreter:-/nonexistent}")" --version 2>/dev/null | sed -n 's/.*version \([0-9]*\)\..*/\1/p' | head -n 1)
    if [ "${major:-0}" -ge "$QEMU_MIN_MAJOR" ]; then return 0; fi
    say "qemu ${major:-?} cannot import torch's aarch64 build; installing Debian 13's qemu-aarch64 beside it"
    fetch_newer_qemu
    update-binfmts --disable qemu-aarch64 >/dev/null 2>&1 || true
    printf '%s' ':pudev-qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:'"$QEMU_NEWER"':F' \
        > /proc/sys/fs/binfmt_misc/register
}

fetch_newer_qemu() {
    fetch_deb trixie qemu-user
    install -D -m 0755 "$work/x/usr/bin/qemu-aarch64" "$QEMU_NEWER"
    rm -rf "$work"
}

# Download one package of another Debian suite and unpack it into $work/x, without touching the host's
# apt sources or installed packages (the caller installs what it needs from there and removes $work).
fetch_deb() {
    work=$(mktemp -d)
    # The host's Debian archive (first entry of either sources format), with the other suite.
    archive=$(sed -n 's/^URIs: *\([^ ]*debian\)\/*$/\1/p; s/^deb \(http[^ ]*debian\)\/* .*/\1/p' \
        /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n 1)
    printf 'deb %s %s main\n' "$archive" "$1" > "$work/sources.list"
    mkdir -p "$work/lists/partial"
    package=$2
    set -- -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
        -o "Dir::State::Lists=$work/lists" -o APT::Sandbox::User=root
    apt-get "$@" -q update >/dev/null
    (cd "$work" && apt-get "$@" -q download "$package" >/dev/null 2>&1)
    dpkg-deb -x "$work/${package}"_*.deb "$work/x"
}

# The buildx plugin for the bake test (tests/e2e/test_buildx_bake.py), Debian sid's current release. It is kept
# where no docker client looks by itself, so the host's `docker build` stays what it was; the test names
# the folder in a client configuration of its own. A client that already has buildx needs none.
BUILDX_PLUGIN=/usr/local/lib/pudev/cli-plugins/docker-buildx
ensure_buildx() {
    if docker buildx version >/dev/null 2>&1 || [ -x "$BUILDX_PLUGIN" ]; then return 0; fi
    if ! is_root_debian; then
        # Only the bake test needs it, and it says so when it skips: no reason to stop a build here.
        say "no docker buildx plugin: the bake test will skip; run this script as root once to fetch one"
        return 0
    fi
    say "installing Debian sid's docker-buildx into ${BUILDX_PLUGIN%/*} (read by the bake test only)"
    fetch_deb sid docker-buildx
    install -D -m 0755 "$work/x/usr/libexec/docker/cli-plugins/docker-buildx" "$BUILDX_PLUGIN"
    rm -rf "$work"
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

PODMAN_USER=${PUDEV_PODMAN_USER:-pudev-podman}
SUBID_COUNT=65536

# The first id after every range already handed out in a subordinate-id file, at least 100000.
next_subid() {
    awk -F: 'BEGIN { next_id = 100000 } NF == 3 && $2 + $3 > next_id { next_id = $2 + $3 } END { print next_id }' "$1"
}

# Write $2 to the file $1 only when it differs, owned by the podman user (its podman reads it).
put_user_file() {
    if [ "$(cat "$1" 2>/dev/null)" != "$2" ]; then
        printf '%s\n' "$2" >"$1"
        chown "$PODMAN_USER:" "$1"
    fi
}

as_podman_user() {
    home=$(getent passwd "$PODMAN_USER" | cut -d: -f6)
    runtime=/run/user/$(id -u "$PODMAN_USER")
    (cd "$home" && runuser -u "$PODMAN_USER" -- env HOME="$home" XDG_RUNTIME_DIR="$runtime" "$@")
}

ensure_podman() {
    if ! is_root_debian; then
        if command -v podman >/dev/null 2>&1 && id "$PODMAN_USER" >/dev/null 2>&1; then
            return 0
        fi
        say "rootless podman is not set up: run 'sudo sh scripts/host-setup.sh podman' (installs podman and uidmap, creates the user $PODMAN_USER)"
        return 1
    fi
    missing=""
    command -v podman >/dev/null 2>&1 || missing="$missing podman"
    command -v newuidmap >/dev/null 2>&1 || missing="$missing uidmap"
    if [ -n "$missing" ]; then
        say "installing$missing"
        DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
        # Without recommends: slirp4netns cannot open /dev/net/tun here (runs use --network none),
        # and fuse-overlayfs would only be slower than the kernel's rootless overlay.
        # shellcheck disable=SC2086  # $missing is a list of package names.
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
    fi
    if ! id "$PODMAN_USER" >/dev/null 2>&1; then
        say "creating the rootless podman user $PODMAN_USER"
        useradd --create-home --shell /usr/sbin/nologin --comment "pudev rootless podman" "$PODMAN_USER"
    fi
    # A rootless engine maps the container's other ids onto these ranges.
    for file in /etc/subuid /etc/subgid; do
        [ -e "$file" ] || install -m 0644 /dev/null "$file"
        if ! grep -q "^$PODMAN_USER:" "$file"; then
            start=$(next_subid "$file")
            flag=--add-subuids
            [ "$file" = /etc/subgid ] && flag=--add-subgids
            usermod "$flag" "$start-$((start + SUBID_COUNT - 1))" "$PODMAN_USER"
        fi
    done
    home=$(getent passwd "$PODMAN_USER" | cut -d: -f6)
    config=$home/.config/containers
    runuser -u "$PODMAN_USER" -- mkdir -p "$config"
    # overlay, never vfs: vfs copies every layer in full (about 106 GB for one of these images).
    put_user_file "$config/storage.conf" '[storage]
driver = "overlay"'
    # No systemd here: cgroups through cgroupfs and events to a file instead of the journal.
    put_user_file "$config/containers.conf" '[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"'
    # /run is a tmpfs: its runtime directory (what a login session would make) is made again after a boot.
    runtime=/run/user/$(id -u "$PODMAN_USER")
    [ -d "$runtime" ] || install -d -m 0700 -o "$PODMAN_USER" -g "$(id -g "$PODMAN_USER")" "$runtime"
    if ! driver=$(as_podman_user podman info --format '{{.Store.GraphDriverName}}' 2>/dev/null); then
        say "podman as $PODMAN_USER does not work: $(as_podman_user podman info 2>&1 >/dev/null | tail -n 1)"
        return 1
    fi
    if [ "$driver" != overlay ]; then
        say "podman as $PODMAN_USER uses the '$driver' storage driver, not overlay; its storage was made before storage.conf: reset it with 'runuser -u $PODMAN_USER -- podman system reset --force'"
        return 1
    fi
}

# CI=true, or the opt-in variable's value ($1) is 1.
opted_in() { [ "${CI:-}" = true ] || [ "$1" = 1 ]; }

tidy() {
    docker=${PUDEV_DOCKER:-docker}
    command -v "$docker" >/dev/null 2>&1 || docker=/usr/bin/docker
    for label in org.pudev.variant org.pudev.standin.recipe; do
        "$docker" image prune -f --filter "label=$label" >/dev/null
    done
    if opted_in "${PUDEV_PRUNE_BUILD_CACHE:-}"; then
        # Midway through a run the tests name its age: a record no step of this run used is an older
        # build's, which the next run will not use either.
        if [ -n "${PUDEV_BUILD_CACHE_UNUSED_FOR:-}" ]; then
            "$docker" builder prune -f --filter "until=$PUDEV_BUILD_CACHE_UNUSED_FOR" >/dev/null
        fi
        "$docker" builder prune -f --keep-storage "${PUDEV_BUILD_CACHE_KEEP:-10GB}" >/dev/null
        return 0
    fi
    # Measured peaks (docs/maintaining/benchmarks-log.md): a first run builds every stand-in and image.
    if [ -n "$("$docker" images -q --filter label=org.pudev.standin.recipe)" ]; then
        need=${PUDEV_TEST_DISK_GB:-25} run="a test run"
    else
        need=${PUDEV_FIRST_RUN_DISK_GB:-70} run="a first test run (no stand-in built yet)"
    fi
    root=$("$docker" info --format '{{.DockerRootDir}}')
    free=$(df -P -k "$root" | awk 'NR == 2 { print int($4 / 1048576) }')
    if [ "$free" -lt "$need" ]; then
        say "Docker's disk has ${free} GB free and ${run} needs about ${need} GB: free some space, or let this script cut Docker's build cache, every project's, to ${PUDEV_BUILD_CACHE_KEEP:-10GB} with PUDEV_PRUNE_BUILD_CACHE=1"
        return 1
    fi
}

podman_if_asked() {
    if opted_in "${PUDEV_CREATE_PODMAN_USER:-}"; then
        ensure_podman
    elif ! id "$PODMAN_USER" >/dev/null 2>&1; then
        say "not creating the rootless podman user $PODMAN_USER (its tests skip): set PUDEV_CREATE_PODMAN_USER=1 to have it"
    fi
}

case $what in
    tools) ensure_tools ;;
    engine) ensure_engine ;;
    podman) ensure_podman ;;
    tidy) ensure_engine && tidy ;;
    all) ensure_tools && ensure_engine && podman_if_asked && tidy ;;
    *) say "unknown step '$what': use tools, engine, podman, tidy or all"; exit 2 ;;
esac
