#!/bin/sh
# Add what the runtime bases lack: compilers (plus an older g++ where a toolkit's
# nvcc refuses the default one), build tools, zsh and tini, and what cluster jobs
# need: the user-space InfiniBand/RoCE verbs libraries with their hardware providers
# (NCCL loads libibverbs to use that hardware; ibv_devinfo shows what is visible)
# and an ssh client for MPI-style launchers. Debian's rdma-core package itself is
# left out: it holds the host's udev rules and systemd units and pulls in udev.
# Usage: install-os-packages.sh APT_MIRROR mirror|upstream CXX_STANDARD MAX_GCC [MAX_GCC...]
# (APT_MIRROR and the security suites' server: BUILD_APT_MIRROR and BUILD_APT_SECURITY, which
# `pudev plan` passes; an empty APT_MIRROR keeps the base's own sources). Needs /tmp/apt.py mounted.
set -eu
apt_mirror=$1
apt_security=$2
cxx_standard=$3
shift 3
sources=$(mktemp -d)
trap 'rm -rf "$sources"' EXIT

# Download through the build's mirror; the image's own /etc/apt stays as the base has it.
python3 /tmp/apt.py "$apt_mirror" "$apt_security" "$sources"
# shellcheck disable=SC2086  # PUDEV_APT_CA_OPTIONS holds several words on purpose.
# dpkg's fsync after every file buys nothing in a build step, whose layer is kept only once it
# ends, and no build step reads the descriptions' translations (6 MB to fetch and parse on every
# cold build): both here alone (the image's own apt keeps its defaults).
set -- "$@" -- -o "Dir::Etc::SourceList=$sources/sources.list" \
    -o "Dir::Etc::SourceParts=$sources/sources.list.d" -o "Dpkg::Options::=--force-unsafe-io" \
    -o "Acquire::Languages=none" ${PUDEV_APT_CA_OPTIONS:-}
max_gccs=""
while [ "$1" != "--" ]; do max_gccs="$max_gccs $1"; shift; done
shift

export DEBIAN_FRONTEND=noninteractive
# What no build and no torch reads stays out, as in Ubuntu's minimized images: documentation (its
# copyright files kept), manuals, translations, and gcc's LTO dump tools (55 MB for two gccs).
# The file stays in the image, so a user's apt-get install follows it too.
cat > /etc/dpkg/dpkg.cfg.d/pudev-slim <<'SLIM'
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-exclude=/usr/share/lintian/*
path-exclude=/usr/bin/*lto-dump*
SLIM
apt-get "$@" -q update
default_gcc=$(apt-cache "$@" show --no-all-versions g++ \
    | sed -n 's/^Version: \([0-9]*:\)\{0,1\}\([0-9]*\).*/\2/p' | head -n 1)
extra=""
for max in $max_gccs; do
    if [ "$default_gcc" -gt "$max" ]; then
        case " $extra " in *" g++-$max "*) ;; *) extra="$extra g++-$max" ;; esac
    fi
done
echo "install-os-packages: default g++ $default_gcc; for older toolkits:${extra:- none needed}"
# Each package and why it is here, one per line as docker-stacks writes them (sed drops the comments).
packages=$(sed 's/#.*//' <<'PACKAGES'
g++                      # the host compiler nvcc and torch's C++ extensions use (the base has none)
make                     # Makefile-driven projects and CMake's default generator
ninja-build              # torch.utils.cpp_extension builds in parallel with ninja (slow serial setuptools without)
cmake                    # CMake-built CUDA projects and extensions (FindCUDAToolkit, CMAKE_CUDA_COMPILER)
git                      # pip install git+https://..., and the checkouts a dev container works in
curl                     # downloads in notebooks and scripts; the runtime bases ship no HTTP client
ca-certificates          # TLS for git, curl, pip and apt through the mirrors
unzip                    # datasets and model archives shipped as .zip
less                     # a pager for git, man and long logs
nano                     # an editor in a bare terminal (JupyterLab's terminal, kubectl exec)
procps                   # ps, top and free: what is running and how much memory it takes
zsh                      # the default user's shell
zsh-syntax-highlighting  # colours a command line as it is typed
zsh-autosuggestions      # suggests from history as you type
tini                     # PID 1: forwards signals to JupyterLab and reaps zombies
libibverbs1              # the verbs library NCCL loads for InfiniBand/RoCE (dlopen at run time)
ibverbs-providers        # the hardware drivers libibverbs loads (mlx5 and others)
librdmacm1               # RDMA connection management, which NCCL's and UCX's IB transports use
ibverbs-utils            # ibv_devinfo: which InfiniBand devices the container sees (`pudev verify`)
openssh-client           # MPI-style launchers (mpirun, deepspeed) reach the other nodes over ssh
PACKAGES
)
# shellcheck disable=SC2086  # $extra and $packages are lists of package names.
apt-get "$@" -q install -y --no-install-recommends $packages $extra
rm -rf /var/log/apt/* /var/log/dpkg.log /var/cache/debconf/*-old

# torch's extensions compile with CXX_STANDARD (c++20 from torch 2.12): the default g++ must take it.
probe=$(mktemp -d)
printf '#include <version>\n#if __cplusplus < 202002L && defined(PUDEV_NEED_20)\n#error\n#endif\nint main() {}\n' \
    > "$probe/probe.cpp"
need=""
[ "$cxx_standard" = "c++17" ] || need="-DPUDEV_NEED_20"
if ! g++ "-std=$cxx_standard" ${need:+"$need"} "$probe/probe.cpp" -o "$probe/probe"; then
    echo "install-os-packages: the default g++ ($(g++ -dumpversion)) does not accept -std=$cxx_standard," \
        "which torch's C++ extensions use; choose a base whose g++ does (gcc 11 or newer for c++20)" >&2
    exit 1
fi
rm -rf "$probe"
echo "install-os-packages: g++ $(g++ -dumpversion) accepts -std=$cxx_standard"
