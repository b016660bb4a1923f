#!/bin/sh
# Run a build step in a stage of its own on the bare base, and keep everything it wrote (files,
# links and the directories it made or changed, found by inode change time, which no copy or
# unpack can set back) as one tar, which the final stage unpacks. So a step that needs only
# the base (the OS packages, each Python package layer) runs side by side with the others,
# and its layer holds exactly what it would have written in place. What it wrote is removed
# once in the tar, so the stage keeps one copy. -xdev stays off /tmp, the cache mounts and
# the secret; the files BuildKit bind-mounts into /etc are not the step's.
# The command sees PUDEV_WRITTEN_SINCE, a file as old as the step, to find what it wrote so far.
# Usage: sh capture-written.sh TAR COMMAND [ARG...]
set -eu
tar_file=$1
shift
PUDEV_WRITTEN_SINCE=/tmp/pudev-step-started
export PUDEV_WRITTEN_SINCE
: > "$PUDEV_WRITTEN_SINCE"
"$@"
cd /
staged=$(dirname "$tar_file" | sed 's|^/||')
# The mount points of the Dockerfile's cache and secret mounts are left out too (their roots change).
written() {
    find . -xdev -cnewer "$PUDEV_WRITTEN_SINCE" ! -path . ! -path ./tmp ! -path ./etc/hosts \
        ! -path ./etc/hostname ! -path ./etc/resolv.conf ! -path "./$staged" ! -path "./$staged/*" \
        ! -path ./root/.cache/uv ! -path ./root/.cache/pip ! -path ./var/cache/apt ! -path ./var/lib/apt/lists \
        ! -path ./run/secrets "$@"
}
mkdir -p "/$staged"
written -print0 > /tmp/written
tar --create --file "$tar_file" --directory / --null --no-recursion --files-from /tmp/written
# Files and links go; directories stay (some are the base's own).
written \( -type f -o -type l \) -print0 | xargs -0 -r rm -f
echo "capture-written: $(tr -cd '\0' < /tmp/written | wc -c) entries in $tar_file"
