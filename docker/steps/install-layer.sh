#!/bin/sh
# One Python package layer, in its own stage on the bare base (run by capture-written.py --compile,
# which byte-compiles what it wrote and keeps that for the final stage): its slice of the lock (/tmp/layer.txt, cut by
# lock_slices.py), less what the base ships, installed by uv (from the installer stage) with the lock's
# hashes and without dependencies (the other layers bring those, and check-installed.py after
# the last one proves they all agree).
# The base-package record (/etc/pudev/base-packages.txt) is written here, from the bare base.
# Its helpers, uv and pudev's mirror code lie beside it (the Dockerfile's installer stage).
# Usage: sh install-layer.sh BUILD_MIRROR
set -eu
mirror=$1
here=$(dirname "$0")
python3 "$here/lock-against-base.py" /tmp/layer.txt /tmp/install.txt /etc/pudev/base-packages.txt
eval "$(PYTHONPATH="$here/pudev-lib" python3 -m pudev.mirror build-env "$mirror")"
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
