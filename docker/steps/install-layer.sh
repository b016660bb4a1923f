#!/bin/sh
# One Python package layer: its slice of the lock (/tmp/layer.txt, cut by lock_slices.py),
# less what the base ships, installed by uv (from the uv stage) with the lock's
# hashes and without dependencies: the other layers bring those, and `uv pip check` after
# the last layer proves that they all agree, the base's own packages included (as pip check
# does, in a tenth of the time; check-installed.py says which upstream quirk it lets through). The world-writable .lock uv leaves in the environment goes.
# Its helpers, uv and pudev's mirror code lie beside it (the Dockerfile's installer stage).
# Usage: sh install-layer.sh BUILD_MIRROR first|next|last
#   first records what the base ships; next and last read that record (lock-against-base.py).
set -eu
mirror=$1
position=$2
here=$(dirname "$0")
if [ "$position" = first ]; then record="write"; else record="read"; fi
python3 "$here/lock-against-base.py" "$record" /tmp/layer.txt /tmp/install.txt /etc/pudev/base-packages.txt
eval "$(PYTHONPATH="$here/pudev-lib" python3 -m pudev.mirror build-env "$mirror")"
if [ -s /tmp/install.txt ]; then
    sh "$here/with-ca.sh" "$here/uv/bin/uv" pip install --python "$(command -v python3)" --require-hashes \
        --no-deps --compile-bytecode --link-mode copy -r /tmp/install.txt
fi
if [ "$position" = last ]; then
    python3 "$here/check-installed.py" "$here/uv/bin/uv" /etc/pudev/base-packages.txt
fi
rm -f "$(python3 -c 'import sys; print(sys.prefix)')/.lock"
