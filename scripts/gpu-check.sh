#!/bin/sh
# The GPU half of the checks, run directly on a machine with an NVIDIA GPU and
# PyTorch but no Docker engine (the device machine): the GPU tests of
# tests/image with PUDEV_REQUIRE_GPU=1, `pudev verify`, `pudev gpumon` and a
# full `pudev bench` ladder. Results land in $OUT (default reports/gpu).
# The machine's own torch and CUDA stand in for the image's; a record of them
# is written first so the in-image tests know what to expect.
set -eu
out=${OUT:-reports/gpu}
mkdir -p "$out"
export PYTHONPATH="$PWD/scripts:$PWD/tests/image${PYTHONPATH:+:$PYTHONPATH}"
export PUDEV_REQUIRE_GPU=1 PUDEV_RECORD="$out/image.json" PUDEV_TESTS_DIR="$PWD/tests/image"
python=${PYTHON:-python3}
"$python" -m pip install -q nvidia-ml-py pytest tqdm matplotlib 2>/dev/null || true

cuda=$("$python" -c 'import torch; print(torch.version.cuda)')
torch=$("$python" -c 'import torch; print(torch.__version__.split("+")[0])')
toolkit=${CUDA_HOME:-/usr/local/cuda}
"$python" -m pudev.image.record write "$PUDEV_RECORD" --lock requirements/lock/cu121.txt --variant device \
    --image device --torch "$torch" --cuda "$cuda" --python 3 --default-toolkit "$cuda" --arch-list 9.0 \
    --mirror none --build-mirror none --user "$(id -un)" --toolkit "$cuda:13" --toolkit "$cuda:13"
sed -i "s#/usr/local/cuda-$cuda#$toolkit#g" "$PUDEV_RECORD"

status=0
"$python" -m pytest "$PWD/tests/image/test_gpu.py" -p no:cacheprovider -ra \
    -k "not extension" --junitxml="$out/gpu-tests.xml" 2>&1 | tee "$out/gpu-tests.log" || status=1
"$python" -m pudev.image verify --json > "$out/verify.json" || status=1
"$python" -m pudev.image gpumon --json > "$out/gpumon.json" || status=1
"$python" -m pudev.image bench --out "$out/bench" --data-dir /tmp/pudev-bench-data --no-progress \
    2>&1 | tee "$out/bench.log" || status=1
"$python" -m pudev.image bench --model vit_b_16 --batch-size 64 --out "$out/bench-vit" \
    --data-dir /tmp/pudev-bench-data --no-progress 2>&1 | tee "$out/bench-vit.log" || status=1
exit "$status"
