#!/bin/sh
# One Python package layer, in its own stage on the bare base (run by capture-written.py --compile,
# which byte-compiles what it wrote and keeps that for the final stage): its slice of the lock (/tmp/layer.txt, cut by
# lock_slices.py), less what the base ships, installed by uv (from the installer stage) with the lock's
# hashes and without dependencies (the other layers bring those, and check-installed.py after
# the last one proves they all agree).
# The base-package record (/etc/pudev/base-packages.txt) is written here, from the bare base.
# With `since`, in the final stage over every layer: what the lock pins since the lock the layers were
# cut from (/tmp/since, lock_slices.py --layered), against that record (Python sees the layers there
# too): each moved pin installed over its layer's version, each name the lock pins no more removed.
# Its helpers, uv and pudev's mirror code lie beside it (the Dockerfile's installer stage).
# Usage: sh install-layer.sh BUILD_MIRROR [since]
set -eu
mirror=$1
here=$(dirname "$0")
record=/etc/pudev/base-packages.txt
if [ "${2:-}" = since ] && [ ! -s /tmp/since/pins.txt ] && [ ! -s /tmp/since/dropped.txt ]; then
    echo "install-layer: the lock pins nothing since the lock the layers were cut from"
    exit 0
fi
if [ "${2:-}" = since ]; then
    python3 "$here/lock-against-base.py" --recorded /tmp/since/pins.txt /tmp/install.txt "$record" \
        /tmp/since/dropped.txt /tmp/remove.txt
else
    python3 "$here/lock-against-base.py" /tmp/layer.txt /tmp/install.txt "$record"
    : > /tmp/remove.txt
fi
eval "$(PYTHONPATH="$here/pudev-lib" python3 -m pudev.mirror build-env "$mirror")"
# The build's index is BUILD_MIRROR's alone: over the layers, the final stage already holds the image's
# run-time /etc/uv/uv.toml (MIRROR), which is for its users, not for this build.
export UV_NO_CONFIG=1
if [ -s /tmp/remove.txt ]; then
    "$here/uv/bin/uv" pip uninstall --python "$(command -v python3)" --break-system-packages -r /tmp/remove.txt
fi
if [ -s /tmp/install.txt ]; then
    # uv's own --compile-bytecode would compile the whole environment, the base's torch included.
    # --break-system-packages: a system-Python base (PEP 668) takes them, as the image lets pip and uv do.
    sh "$here/with-ca.sh" "$here/uv/bin/uv" pip install --python "$(command -v python3)" --require-hashes \
        --no-deps --link-mode copy --break-system-packages -r /tmp/install.txt
fi
rm -f "$(python3 -c 'import sys; print(sys.prefix)')/.lock"
# The test suites of the biggest packages (scipy 31 MB, pandas 45 MB): nothing imports them at run time.
purelib=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for package in scipy pandas matplotlib; do
    if [ -d "$purelib/$package" ]; then
        find "$purelib/$package" -type d -name tests -prune -exec rm -rf {} +
    fi
done
