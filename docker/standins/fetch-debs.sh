#!/bin/sh
# Download Debian's packaging of NVIDIA's compiler programs without installing it.
# Usage: fetch-debs.sh SUITE TOOLKIT_VERSION DEV_VERSION DEST
# The non-free component (and the SUITE, e.g. trixie) are added by rewriting the
# image's own apt entries, so no archive host is named here.
set -eu
suite=$1
toolkit_version=$2
dev_version=$3
dest=$4
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT

codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
awk -v from="$codename" -v to="$suite" \
    '$1 == "deb" && $3 == from { print $1, $2, to, "main", "non-free" }' \
    /etc/apt/sources.list > "$state/sources.list"
if [ ! -s "$state/sources.list" ]; then
    echo "fetch-debs: no 'deb URI $codename ...' entry in /etc/apt/sources.list to derive $suite non-free from" >&2
    exit 1
fi
mkdir -p "$state/lists/partial" "$dest"
# shellcheck disable=SC2086  # PUDEV_APT_CA_OPTIONS holds several words on purpose.
set -- -o "Dir::Etc::SourceList=$state/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
    -o "Dir::State::Lists=$state/lists" ${PUDEV_APT_CA_OPTIONS:-}
apt-get "$@" -q update
cd "$dest"
for package in "nvidia-cuda-toolkit=$toolkit_version" "nvidia-cuda-dev=$dev_version"; do
    name=${package%%=*}
    version=${package#*=}
    # Debian writes the epoch-less version with ':' escaped; match on the name and version.
    if ls "${name}_$(echo "$version" | sed 's/:/%3a/')"_*.deb >/dev/null 2>&1; then
        echo "fetch-debs: $package already downloaded"
        continue
    fi
    rm -f "${name}"_*.deb
    apt-get "$@" -q download "$package"
done
