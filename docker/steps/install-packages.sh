#!/bin/sh
# One of the image's two Python package steps: PART of the variant's lock (rarely-changing or
# the-rest, cut by pudev.common.lock_file), installed by uv with the lock's hashes, without
# dependencies (the lock holds them all; check-installed.py proves they agree), byte-compiled,
# through BUILD_PYPI_INDEX (empty: the base's own index). What the base ships is kept as it is
# (lock-against-base.py).
# Usage: install-packages.sh BUILD_PYPI_INDEX PART     (its mounts: see the Dockerfile)
set -eu
index=$1
part=$2
# The base's packages, recorded by the first step from the base alone, read by the second.
record=/etc/pudev/base-packages.txt
if [ "$part" = rarely-changing ]; then
    python3 /tmp/steps/lock-against-base.py "/tmp/parts/$part.txt" /tmp/install.txt "$record"
else
    python3 /tmp/steps/lock-against-base.py --recorded "/tmp/parts/$part.txt" /tmp/install.txt "$record"
fi
# The build's index is BUILD_PYPI_INDEX alone: no uv.toml of the base's applies.
export UV_NO_CONFIG=1
if [ -n "$index" ]; then
    export UV_DEFAULT_INDEX="$index"
fi
if [ -s /tmp/install.txt ]; then
    # --break-system-packages: a system-Python base (PEP 668) takes them, as the image lets pip and uv do.
    sh /tmp/steps/with-ca.sh /tmp/tools/bin/uv pip install --python "$(command -v python3)" --require-hashes \
        --no-deps --link-mode copy --compile-bytecode --break-system-packages -r /tmp/install.txt
fi
rm -f "$(python3 -c 'import sys; print(sys.prefix)')/.lock"
# The test suites of the biggest packages (scipy 31 MB, pandas 45 MB): nothing imports them at run time.
purelib=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for package in scipy pandas matplotlib; do
    if [ -d "$purelib/$package" ]; then
        find "$purelib/$package" -type d -name tests -prune -exec rm -rf {} +
    fi
done
