#!/bin/sh
# A current Docker engine beside the host's: Debian sid's docker.io, containerd and docker-buildx,
# with the containerd image store on (what a fresh Docker 29 install uses), in a root of its own that
# runs as one privileged container of the host's engine. The host's engine, packages and libc stay
# as they are; the new engine's images and build cache live under its own data root.
#   up      build the root once (debootstrap, under a minute), start the engine, print the two
#           variables that point a docker client (and pudev) at it
#   run CMD [ARG...]  run a command in the engine's network namespace with those variables set:
#           what the command serves on 127.0.0.1 (a benchmark's registry) the engine reaches
#   down    stop the engine; its images stay for the next `up`
#   remove  stop it and delete its root and everything it stored
# It has a network namespace of its own (its container's, on the host engine's default bridge), with
# its own bridge and iptables rules there: a daemon on the host's network would take over the host
# engine's bridge (Docker deletes docker0 when told to make none) and share its iptables chains.
# Usage: scripts/current-engine.sh up|run|down|remove   (as root)
#   PUDEV_DEBIAN_ARCHIVE  the Debian archive to fetch sid from (default: the host's own apt source)
#   PUDEV_DOCKER          the host's docker client (default: docker)
#   PUDEV_CURRENT_ENGINE_CACHE  the cap on its build cache (default: 20GB)
#   PUDEV_CURRENT_ENGINE_DIR    its data root on the host (default: /var/lib/pudev/current-engine)
set -eu

STATE=${PUDEV_CURRENT_ENGINE_DIR:-/var/lib/pudev/current-engine}
NAME=pudev-current-engine
IMAGE=pudev-current-engine:sid
RUN_DIR=/run/pudev-current-engine
PACKAGES=docker.io,docker-buildx,containerd,ca-certificates
# Where scripts/host-setup.sh keeps sid's buildx plugin; a client configuration of this engine's own
# names it, so the host's own `docker build` stays what it was.
BUILDX_DIR=/usr/local/lib/pudev/cli-plugins

say() { printf 'current-engine: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

case ${1:-} in
    up | down | remove) ;;
    run) [ $# -ge 2 ] || fail "run needs a command (usage: sh scripts/current-engine.sh run CMD [ARG...])" ;;
    *) fail "expected up, run, down or remove; got '${1:-}' (usage: sh scripts/current-engine.sh up|run|down|remove)" ;;
esac
[ "$(id -u)" -eq 0 ] || fail "needs root (it starts a privileged container and writes $STATE): run it with sudo"
DOCKER=${PUDEV_DOCKER:-docker}
if ! "$DOCKER" info >/dev/null 2>&1; then
    fail "no host Docker engine answers: run 'sh scripts/host-setup.sh engine' first"
fi

build_root() {
    "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1 && return 0
    command -v debootstrap >/dev/null 2>&1 || fail "needs debootstrap: sh scripts/host-setup.sh tools installs it"
    # The host's Debian archive (first entry of either sources format), with the sid suite.
    archive=${PUDEV_DEBIAN_ARCHIVE:-$(sed -n 's/^URIs: *\([^ ]*debian\)\/*$/\1/p
        s/^deb \(http[^ ]*debian\)\/* .*/\1/p' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
        head -n 1)}
    [ -n "$archive" ] || fail "no Debian archive in the host's apt sources to fetch sid's engine from:" \
        "set PUDEV_DEBIAN_ARCHIVE to a Debian mirror's URL"
    root=$(mktemp -d)
    trap 'rm -rf "$root"' EXIT
    say "building the engine's root from Debian sid ($PACKAGES)"
    debootstrap --variant=minbase --include="$PACKAGES" sid "$root" "$archive" >/dev/null ||
        fail "debootstrap of sid failed; nothing was kept (rerun to try again)"
    tar -C "$root" -c . | "$DOCKER" import --change 'ENTRYPOINT ["dockerd"]' - "$IMAGE" >/dev/null
    rm -rf "$root"
    trap - EXIT
}

up() {
    build_root
    mkdir -p "$STATE/data" "$STATE/client" "$RUN_DIR"
    # Its build cache is this project's alone, so it may be capped without touching anyone else's.
    printf '{"features": {"containerd-snapshotter": true}, "builder": {"gc": {"enabled": true, %s}}}\n' \
        "\"defaultKeepStorage\": \"${PUDEV_CURRENT_ENGINE_CACHE:-20GB}\"" > "$STATE/daemon.json"
    printf '{"cliPluginsExtraDirs": ["%s"]}\n' "$BUILDX_DIR" > "$STATE/client/config.json"
    if [ "$("$DOCKER" inspect --format '{{.State.Running}}' "$NAME" 2>/dev/null)" != true ]; then
        "$DOCKER" rm -f "$NAME" >/dev/null 2>&1 || true
        # Every capability this host may hand out (--privileged asks for all, and a host that
        # lacks one, as a container host may, refuses it), with the host's cgroups writable.
        bounding=,$(setpriv --dump | sed -n 's/^Capability bounding set: //p'),
        drop=""
        for cap in $(setpriv --list-caps); do
            case $bounding in *",$cap,"*) ;; *) drop="$drop --cap-drop $cap" ;; esac
        done
        # shellcheck disable=SC2086  # $drop is a list of options and their values
        "$DOCKER" run -d --name "$NAME" --cap-add ALL $drop --security-opt seccomp=unconfined \
            --security-opt apparmor=unconfined --security-opt systempaths=unconfined \
            --volume /sys/fs/cgroup:/sys/fs/cgroup --restart no \
            --volume "$STATE/data:/var/lib/docker" --volume "$RUN_DIR:$RUN_DIR" \
            --volume "$STATE/daemon.json:/etc/docker/daemon.json:ro" \
            "$IMAGE" --host "unix://$RUN_DIR/docker.sock" >/dev/null
    fi
    waited=0
    until DOCKER_HOST="unix://$RUN_DIR/docker.sock" "$DOCKER" info >/dev/null 2>&1; do
        waited=$((waited + 1))
        [ "$waited" -le 60 ] || fail "the engine did not answer within 60 s; see: docker logs $NAME"
        sleep 1
    done
    version=$(DOCKER_HOST="unix://$RUN_DIR/docker.sock" "$DOCKER" version --format '{{.Server.Version}}')
    say "started Docker $version with the containerd image store in container $NAME (data: $STATE/data);" \
        "stop: sh scripts/current-engine.sh down; remove it all: sh scripts/current-engine.sh remove"
    printf 'export DOCKER_HOST=unix://%s/docker.sock DOCKER_CONFIG=%s/client\n' "$RUN_DIR" "$STATE"
}

run() {
    shift
    pid=$("$DOCKER" inspect --format '{{.State.Pid}}' "$NAME" 2>/dev/null || true)
    [ "${pid:-0}" -gt 0 ] || fail "the engine is not running: sh scripts/current-engine.sh up"
    exec nsenter --net="/proc/$pid/ns/net" -- env DOCKER_HOST="unix://$RUN_DIR/docker.sock" \
        DOCKER_CONFIG="$STATE/client" "$@"
}

down() {
    "$DOCKER" rm -f "$NAME" >/dev/null 2>&1 || true
}

remove() {
    down
    "$DOCKER" image rm "$IMAGE" >/dev/null 2>&1 || true
    rm -rf "$STATE" "$RUN_DIR"
    rmdir "${STATE%/*}" 2>/dev/null || true # the folder `up` made for it, once empty
    say "removed the engine, its root and its data ($STATE)"
}

"$1" "$@"
