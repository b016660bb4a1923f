#!/bin/sh
# Slim a CUDA toolkit tree (in its toolkit image) to what building CUDA extensions
# needs: compiler, headers, nvvm, the runtime and the two static libraries nvcc
# links by default. Usage: prune-toolkit.sh /usr/local/cuda-X.Y
set -eu
top=$1
if [ ! -x "$top/bin/nvcc" ]; then
    echo "prune-toolkit: $top/bin/nvcc not found: the toolkit image must be a -devel image holding CUDA $(basename "$top")" >&2
    exit 1
fi
before=$(du -sm "$top" | cut -f1)

# Static libraries other than the two nvcc's default link needs.
find "$top/" \( -type f -o -type l \) -name '*.a' ! -name libcudart_static.a ! -name libcudadevrt.a -delete
# Math libraries: torch ships its own copies (the image links the matching major
# version's names to them); their headers stay so extensions compile.
# The profiler's host libraries (libnvperf) serve Nsight, which the image does not ship.
# NVRTC and CUPTI: torch loads its own copies (its nvidia-cuda-nvrtc and -cupti wheels, or the
# conda base's); nvcc uses neither. CUPTI's headers stay, for extensions that build against it.
for pattern in 'libcublas*.so*' 'libcufft*.so*' 'libcurand*.so*' 'libcusolver*.so*' 'libcusparse*.so*' \
    'libnpp*.so*' 'libnvjpeg*.so*' 'libnvblas*.so*' 'libcufile*.so*' 'libnvJitLink*.so*' 'libnvperf*.so*' \
    'libnvrtc*.so*' 'libcupti*.so*' 'libpcsamplingutil*.so*' 'libcheckpoint*.so*'; do
    find "$top/" \( -type f -o -type l \) -name "$pattern" -delete
done
# nvdisasm: only cuobjdump -sass and Nsight read it, never nvcc or torch (50 MB a toolkit).
rm -f "$top/bin/nvdisasm"
# Documentation, samples, profilers' GUIs and GPUDirect Storage tools.
rm -rf "$top/doc" "$top/samples" "$top/extras/demo_suite" "$top/libnvvp" "$top/nsightee_plugins" \
    "$top/gds" "$top/gds-"* "$top/tools" "$top"/nsight-compute-* "$top"/nsight-systems-* \
    "$top/compute-sanitizer/docs" "$top/share/man"

after=$(du -sm "$top" | cut -f1)
echo "prune-toolkit: $top ${before} MB -> ${after} MB"
