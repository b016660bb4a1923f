#!/bin/sh
# After the packages: `uv pip check` proves they and the base agree (check-installed.py); the record
# (/etc/pudev/image.json) joins what the host planned (IMAGE_RECORD) with what the build saw; and
# pudev.pth puts pudev on every interpreter's path, running pudev.image.startup in every Python program
# whatever the uid and whether or not the entrypoint ran (a writable HOME, MAX_JOBS that fits).
# Usage: write-record.sh IMAGE_RECORD     (its mounts: see the Dockerfile)
set -eu
export PYTHONPATH=/tmp/pudev-lib
UV_NO_CACHE=1 python3 /tmp/steps/check-installed.py /tmp/tools/bin/uv /etc/pudev/base-packages.txt
python3 -m pudev.image.record write /etc/pudev/image.json --planned "$1" \
    --locks /tmp/lock --base-packages /etc/pudev/base-packages.txt --user "$PUDEV_USER"
printf '%s\n' /opt/pudev/lib 'import pudev.image.startup as s; s.startup()' \
    > "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/pudev.pth"
