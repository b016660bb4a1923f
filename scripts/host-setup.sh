#!/bin/sh
# Bring up what the full test run needs on this host, idempotently:
#   tools   debootstrap (OS stand-in), shellcheck (lint gate),
#           qemu-user-static and binfmt-support (the arm64 stand-in builds and runs here
#           under emulation; binfmt_misc mounted and its handlers enabled),
#           docker-registry (local registry for publish tests), skopeo (the registry reads and tag
#           copies the release workflow makes), chromium, chromium-driver and a CJK font (JupyterLab and the
#           docs site opened in a real headless browser),
#           docker-compose and the Dev Containers CLI (the real clients of the
#           compose file and the devcontainer)
#   engine  a running Docker engine of 28 or newer with buildx: where none is installed, Debian sid's
#           docker.io, containerd and docker-buildx (the current release) with the containerd image
#           store on, as a fresh Docker 29 install has it; an engine of 28 or newer is used as it is,
#           whichever store it has (this script says which); an older one stops the script with one
#           line, unless PUDEV_REPLACE_ENGINE=1 (or CI=true) lets it put sid's engine in its place
#   podman  Debian's podman for a rootless second engine: a dedicated non-root user
#           ($PUDEV_PODMAN_USER, default pudev-podman) with subordinate id ranges and
#           its own storage.conf (native overlay, never vfs); the Docker engine's
#           configuration is left alone. `all` does this only where asked to (below).
#   disk    stop, with one line, when the engine's disk has less free than a shard needs
# What changes the host beyond installing packages happens only under CI=true or an opt-in:
#   PUDEV_CREATE_PODMAN_USER=1  `all` creates the podman user (its tests skip without it)
#   PUDEV_REPLACE_ENGINE=1      `engine` replaces a Docker engine older than 28 (its images stay on disk)
#   PUDEV_DISK_GB               the free space `disk` asks for (default: FRESH_DISK_GB or WARM_DISK_GB below)
# Where `engine` looks and writes (tests/unit/test_host_setup.py points them into a folder of its own):
#   PUDEV_DOCKER                the docker client, the only one asked when set (default: docker, then /usr/bin/docker)
#   PUDEV_DOCKER_CONFIG_DIR     where an installed engine's daemon.json goes (default /etc/docker, where dockerd reads it)
#   PUDEV_ENGINE_LOG            the log of a dockerd this script starts (default /var/log/pudev-dockerd.log)
#   PUDEV_ENGINE_WAIT_S         how long it waits for that dockerd to answer (default 60)
# It installs and starts things only as root on Debian/Ubuntu; elsewhere it
# prints what is missing and how to get it, and exits non-zero.
# Usage: scripts/host-setup.sh [tools|engine|podman|disk|all]   (default: all)
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
    ensure_devcontainer_cli && ensure_emulation
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
    work=$(mktemp -d)
    fetch_debs trixie qemu-user
    dpkg-deb -x "$work"/debs/qemu-user_*.deb "$work/x"
    install -D -m 0755 "$work/x/usr/bin/qemu-aarch64" "$QEMU_NEWER"
    rm -rf "$work"
}

# Download packages ($2...) of another Debian suite ($1) into $work/debs, $work being a fresh folder the
# caller made and removes, without touching the host's apt sources or installed packages.
fetch_debs() {
    suite=$1
    shift
    # The host's Debian archive (first entry of either sources format), with the other suite.
    archive=$(sed -n 's/^URIs: *\([^ ]*debian\)\/*$/\1/p; s/^deb \(http[^ ]*debian\)\/* .*/\1/p' \
        /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n 1)
    printf 'deb %s %s main\n' "$archive" "$suite" > "$work/sources.list"
    mkdir -p "$work/lists/partial" "$work/debs"
    apt_options="-o Dir::Etc::SourceList=$work/sources.list -o Dir::Etc::SourceParts=/nonexistent
        -o Dir::State::Lists=$work/lists -o APT::Sandbox::User=root"
    # shellcheck disable=SC2086  # $apt_options is a list of options; $work holds no spaces (mktemp)
    apt-get $apt_options -q update >"$work/apt-update.log" 2>&1 &&
        (cd "$work/debs" && apt-get $apt_options -q download "$@" >/dev/null 2>&1)
}

engine_up() {
    for client in ${PUDEV_DOCKER:-docker /usr/bin/docker}; do
        if command -v "$client" >/dev/null 2>&1 && "$client" info >/dev/null 2>&1; then
            return 0
        fi
    done
    return 1
}

ENGINE_MIN_MAJOR=28
# Debian sid's current engine. Its runc and tini come from the host's own release (sid's need a newer libc).
ENGINE_PACKAGES="docker.io containerd docker-buildx docker-cli tini-static"
ENGINE_CONFIG_DIR=${PUDEV_DOCKER_CONFIG_DIR:-/etc/docker}
ENGINE_LOG=${PUDEV_ENGINE_LOG:-/var/log/pudev-dockerd.log}
ENGINE_WAIT_S=${PUDEV_ENGINE_WAIT_S:-60}

start_engine() {
    engine_up && return 0
    if [ "$(id -u)" -ne 0 ] || ! command -v dockerd >/dev/null 2>&1; then
        say "no Docker daemon answers: start one with 'sudo systemctl start docker' (or 'sudo dockerd &')"
        return 1
    fi
    say "starting dockerd in the background (log: $ENGINE_LOG)"
    setsid dockerd >"$ENGINE_LOG" 2>&1 < /dev/null &
    waited=0
    until engine_up; do
        waited=$((waited + 1))
        if [ "$waited" -gt "$ENGINE_WAIT_S" ]; then
            say "dockerd did not come up within $ENGINE_WAIT_S s: its last line was '$(tail -n 1 "$ENGINE_LOG")' (all of it: $ENGINE_LOG)"
            return 1
        fi
        sleep 1
    done
}

stop_engine() {
    pkill -x dockerd 2>/dev/null || return 0
    waited=0
    while pgrep -x dockerd >/dev/null 2>&1 && [ "$waited" -lt 30 ]; do waited=$((waited + 1)); sleep 1; done
}

# sid's packages, downloaded first and installed in one apt transaction: a failed download installs nothing.
install_current_engine() {
    if ! is_root_debian; then
        say "no Docker engine of $ENGINE_MIN_MAJOR or newer: install Docker Engine (docs.docker.com/engine/install) with the buildx plugin, then run this again"
        return 1
    fi
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    # shellcheck disable=SC2086  # a list of package names
    if ! fetch_debs sid $ENGINE_PACKAGES; then
        say "could not download Debian sid's$(printf ' %s' $ENGINE_PACKAGES) (the archive in the host's apt sources); nothing was installed"
        return 1
    fi
    stop_engine
    # shellcheck disable=SC2046  # the downloaded files, whose names hold no spaces
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(ls "$work"/debs/*.deb) >"$work/apt.log" 2>&1; then
        say "installing Debian sid's engine failed: $(tail -n 1 "$work/apt.log"); apt left the host's packages as they were"
        return 1
    fi
    rm -rf "$work"
    trap - EXIT
    # The containerd image store, as a fresh Docker 29 install has it; a daemon.json someone else wrote is theirs.
    if [ ! -e "$ENGINE_CONFIG_DIR/daemon.json" ]; then
        mkdir -p "$ENGINE_CONFIG_DIR"
        printf '{"features": {"containerd-snapshotter": true}}\n' > "$ENGINE_CONFIG_DIR/daemon.json"
    fi
    say "installed Debian sid's $(dockerd --version | sed 's/,.*//') with containerd $(containerd --version | awk '{print $3}') and buildx"
}

ensure_engine() {
    if ! command -v dockerd >/dev/null 2>&1 && ! engine_up; then
        install_current_engine || return 1
    fi
    start_engine || return 1
    docker=${PUDEV_DOCKER:-docker}
    version=$("$docker" version --format '{{.Server.Version}}')
    if [ "${version%%.*}" -lt "$ENGINE_MIN_MAJOR" ]; then
        if ! opted_in "${PUDEV_REPLACE_ENGINE:-}"; then
            say "Docker $version answers here; the tests need $ENGINE_MIN_MAJOR or newer with buildx: upgrade it, or let this script replace it with Debian sid's engine (its images stay on disk, unseen by the new store) with PUDEV_REPLACE_ENGINE=1"
            return 1
        fi
        say "replacing Docker $version with Debian sid's engine (PUDEV_REPLACE_ENGINE=1 or CI=true)"
        install_current_engine && start_engine || return 1
        version=$("$docker" version --format '{{.Server.Version}}')
    fi
    if ! "$docker" buildx version >/dev/null 2>&1; then
        say "Docker $version has no buildx plugin: install it (Debian: docker-buildx), then run this again"
        return 1
    fi
    if "$docker" info --format '{{.DriverStatus}}' | grep -q 'io.containerd.snapshotter'; then
        store="the containerd image store"
    else
        store="the $("$docker" info --format '{{.Driver}}') graph driver"
    fi
    say "engine: Docker $version, buildx, $store"
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

# What a shard adds to the engine's disk at its peak, measured on this project's CI machine
# (docs/maintaining/proof-costs.md): on an engine with no stand-in yet, and on one that keeps them.
FRESH_DISK_GB=40
WARM_DISK_GB=25
check_disk() {
    docker=${PUDEV_DOCKER:-docker}
    if [ -n "${PUDEV_DISK_GB:-}" ]; then
        need=$PUDEV_DISK_GB run="PUDEV_DISK_GB"
    elif [ -n "$("$docker" images -q --filter label=org.pudev.standin.recipe)" ]; then
        need=$WARM_DISK_GB run="a test run (stand-ins built)"
    else
        need=$FRESH_DISK_GB run="a first test run (no stand-in built yet)"
    fi
    root=$("$docker" info --format '{{.DockerRootDir}}')
    free=$(df -P -k "$root" | awk 'NR == 2 { print int($4 / 1048576) }')
    if [ "$free" -lt "$need" ]; then
        say "the engine's disk ($root) has ${free} GB free and ${run} needs ${need} GB: free some space (docker system df shows what the engine holds), then run this again"
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
    disk) ensure_engine && check_disk ;;
    all) ensure_tools && ensure_engine && podman_if_asked && check_disk ;;
    *) say "unknown step '$what': use tools, engine, podman, disk or all"; exit 2 ;;
esac
