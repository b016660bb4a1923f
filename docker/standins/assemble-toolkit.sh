#!/bin/sh
# Assemble a complete CUDA toolkit tree from NVIDIA's pip wheels, plus (for 11.x
# and 12.x, whose nvcc wheels hold only ptxas) NVIDIA's compiler programs as
# repackaged by Debian (recipe: toolkit-standins.md). CUDA 13 wheels carry the
# whole compiler in one nvidia/cu13 tree, so DEB_DIR is then left empty.
# Usage: assemble-toolkit.sh VERSION WHEEL_DIR [DEB_DIR]
# Produces /usr/local/cuda-VERSION laid out like NVIDIA's devel images.
set -eu

version=$1
wheels=$2
debs=${3:-}
top=${TOOLKIT_ROOT:-/usr/local}/cuda-$version
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The toolkit's architecture (TARGET_ARCH, Docker's amd64 or arm64; default: this machine's), where
# its libraries live in Debian's packages, and the targets/ folder its nvcc reads (NVIDIA names
# arm64 servers "sbsa"). Only wheels can be assembled for another architecture than this one's.
arch=${TARGET_ARCH:-$(dpkg --print-architecture)}
case $arch in
    arm64) multiarch=aarch64-linux-gnu target=sbsa-linux ;;
    *) multiarch=x86_64-linux-gnu target=x86_64-linux ;;
esac
if [ -n "$debs" ] && [ "$arch" != "$(dpkg --print-architecture)" ]; then
    echo "assemble-toolkit: CUDA $version needs Debian's compiler programs, fetched for this machine's" \
        "architecture only; build the $arch toolkit from wheels alone (CUDA 13+) or on an $arch machine" >&2
    exit 1
fi

mkdir -p "$top/bin/crt" "$top/include" "$top/lib64/stubs" "$top/nvvm/bin" \
    "$top/extras/CUPTI/include" "$top/extras/CUPTI/lib64" "$top/compute-sanitizer"

# 1. Wheels share the nvidia/ namespace; unzip them into one tree.
for wheel in "$wheels"/nvidia_*.whl; do
    unzip -q -o "$wheel" -d "$work/wheels"
done
find "$work/wheels" -name '__init__.py' -delete
find "$work/wheels" -name '__pycache__' -prune -exec rm -rf {} +

if [ -d "$work/wheels/nvidia/cu${version%%.*}" ]; then
    # CUDA 13+: one tree (bin with nvcc, include, lib, nvvm) holding every component.
    cp -a "$work/wheels/nvidia/cu${version%%.*}/." "$top/"
    rm -rf "${top:?}/lib64"
    mv "$top/lib" "$top/lib64"
    mkdir -p "$top/nvvm/lib64" "$top/lib64/stubs"
    for library in "$top"/lib64/libnvvm.so*; do  # where NVIDIA's toolkits keep it
        if [ -e "$library" ]; then mv "$library" "$top/nvvm/lib64/"; fi
    done
else
    for component in "$work"/wheels/nvidia/*/; do
        name=$(basename "$component")
        case $name in
            cuda_cupti)
                # CUPTI and the sanitizer carry generated headers whose names
                # clash with the runtime's, so they keep their own folders.
                cp -a "$component/include/." "$top/extras/CUPTI/include/"
                cp -a "$component/lib/." "$top/extras/CUPTI/lib64/" ;;
            cuda_sanitizer_api)
                cp -a "$component/." "$top/compute-sanitizer/" ;;
            cuda_nvcc)
                cp -a "$component/bin/ptxas" "$top/bin/"
                cp -a "$component/include/." "$top/include/"
                for part in include lib64 libdevice; do
                    mkdir -p "$top/nvvm/$part"
                    cp -a "$component/nvvm/$part/." "$top/nvvm/$part/"
                done ;;
            *)
                if [ -d "$component/include" ]; then cp -a "$component/include/." "$top/include/"; fi
                if [ -d "$component/lib" ]; then cp -a "$component/lib/." "$top/lib64/"; fi ;;
        esac
    done
fi

# 2. The compiler driver and its helpers from Debian's nvidia-cuda-toolkit (11.x and 12.x).
if [ -n "$debs" ]; then
    dpkg-deb -x "$debs"/nvidia-cuda-toolkit_*.deb "$work/toolkit"
    cp -a "$work/toolkit/usr/lib/nvidia-cuda-toolkit/bin/nvcc" "$top/bin/"
    cp -a "$work/toolkit/usr/lib/nvidia-cuda-toolkit/bin/cicc" "$top/nvvm/bin/"
    cp -a "$work/toolkit/usr/lib/nvidia-cuda-toolkit/bin/crt/link.stub" \
        "$work/toolkit/usr/lib/nvidia-cuda-toolkit/bin/crt/prelink.stub" "$top/bin/crt/"
    for program in cudafe++ fatbinary nvlink bin2c nvprune cuobjdump cu++filt nvdisasm; do
        cp -a "$work/toolkit/usr/bin/$program" "$top/bin/"
    done

    # 3. Static runtime pieces nvcc links by default, and the driver stub.
    dpkg-deb --fsys-tarfile "$debs"/nvidia-cuda-dev_*.deb | tar -x -C "$work" \
        "./usr/lib/$multiarch/libcudart_static.a" \
        "./usr/lib/$multiarch/libcudadevrt.a" \
        "./usr/lib/$multiarch/libculibos.a" \
        "./usr/lib/$multiarch/stubs/libcuda.so"
    cp -a "$work/usr/lib/$multiarch"/*.a "$top/lib64/"
    cp -a "$work/usr/lib/$multiarch/stubs/libcuda.so" "$top/lib64/stubs/"
fi

# 4. NVIDIA's standard nvcc.profile: everything relative to the toolkit root.
[ -f "$top/bin/nvcc.profile" ] || cat > "$top/bin/nvcc.profile" <<'PROFILE'

TOP              = $(_HERE_)/..

NVVMIR_LIBRARY_DIR = $(TOP)/$(_NVVM_BRANCH_)/libdevice

LD_LIBRARY_PATH += $(TOP)/lib:
PATH            += $(TOP)/$(_NVVM_BRANCH_)/bin:$(_HERE_):

INCLUDES        +=  "-I$(TOP)/$(_TARGET_DIR_)/include" $(_SPACE_)

LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)/stubs" "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)"

CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
PROFILE

# 5. Unversioned links (libfoo.so -> libfoo.so.N) the linker looks for.
for library in "$top"/lib64/*.so.* "$top"/extras/CUPTI/lib64/*.so.*; do
    [ -e "$library" ] || continue
    unversioned=${library%%.so.*}.so
    [ -e "$unversioned" ] || ln -s "$(basename "$library")" "$unversioned"
done

# 6. The targets/ layout and lib link that nvcc.profile and CMake expect.
mkdir -p "$top/targets/$target"
ln -s ../../include "$top/targets/$target/include"
ln -s ../../lib64 "$top/targets/$target/lib"
ln -s lib64 "$top/lib"

# 7. Wheels do not keep usable modes (ptxas arrives as 0700): readable by all,
#    programs executable by all, as in NVIDIA's packages.
chmod -R u+rwX,go+rX "$top"
chmod 0755 "$top"/bin/* "$top"/nvvm/bin/* 2>/dev/null || true
chmod 0644 "$top"/bin/nvcc.profile "$top"/bin/crt/*

# 8. version.json as the real toolkit has it.
# nvcc's own version, from its wheel where the wheel holds nvcc (it may be another architecture's).
if [ -n "$debs" ]; then
    nvcc_version=$("$top/bin/nvcc" --version | sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/\1/p')
else
    nvcc_version=$(basename "$wheels"/nvidia_cuda_nvcc-*.whl | cut -d- -f2)
fi
# The metapackage wheel names the toolkit release (cuda_toolkit-11.8.0-...).
release=$(basename "$wheels"/cuda_toolkit-*.whl | cut -d- -f2)
cat > "$top/version.json" <<JSON
{
   "cuda" : {
      "name" : "CUDA SDK",
      "version" : "$release"
   },
   "cuda_nvcc" : {
      "name" : "CUDA NVCC",
      "version" : "$nvcc_version"
   }
}
JSON
echo "assembled CUDA $release (nvcc $nvcc_version) in $top"
