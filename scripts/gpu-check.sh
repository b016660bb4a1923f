#!/bin/sh
# The GPU half of the checks, run directly on a machine with an NVIDIA GPU and
# PyTorch but no Docker engine (the device machine), from the repository root:
#   OUT=reports/gpu sh scripts/gpu-check.sh
# Steps: `pudev verify` and `pudev gpumon`; the GPU half of tests/image
# (`pudev selftest -- -m gpu`) with PUDEV_REQUIRE_GPU=1, before the long runs so
# that a stuck bench cannot starve it; a full `pudev bench` (ResNet-50); then a
# ViT-B/16 bench if the time budget (GPU_CHECK_SECONDS, default 540) still allows one.
# The machine's own torch, CUDA and nvcc stand in for the image's: a record of
# them is written first so the tools and tests know what to expect.
# $OUT receives at most 8 files (the device tool returns no more): checks.log,
# verify.json, gpu-tests.log, bench.log and each model's bench.json/bench.png.
# Exit status: 0 when every step passed, 1 otherwise; the summary says which.
set -u
out=${OUT:-reports/gpu}
budget=${GPU_CHECK_SECONDS:-540}
python=${PYTHON:-python3}
repo=$(pwd)
started=$(date +%s)
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# pudev's image side from this checkout, reachable as `pudev` like in the image.
mkdir -p "$work/bin"
printf '#!/bin/sh\nexec %s -m pudev.image "$@"\n' "$(command -v "$python")" > "$work/bin/pudev"
chmod +x "$work/bin/pudev"
export PATH="$work/bin:$PATH"
export PYTHONPATH="$repo/scripts:$repo/tests/image${PYTHONPATH:+:$PYTHONPATH}"
export PUDEV_REQUIRE_GPU=1 PUDEV_RECORD="$work/image.json" PUDEV_TESTS_DIR="$repo/tests/image" PYTHONUNBUFFERED=1

# The toolkit: CUDA_HOME, else the nvcc on PATH, else /usr/local/cuda.
nvcc=$(command -v nvcc || true)
CUDA_HOME=${CUDA_HOME:-${nvcc:+$(dirname "$(dirname "$nvcc")")}}
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
# torch's CUDA and release, this GPU's architecture (8.0 without one), and the C++ standard torch
# builds extensions with (C++20 from 2.12): one interpreter, since each torch import costs seconds.
facts=$("$python" -c 'import torch
release = torch.__version__.split("+")[0]
arch = "%d.%d" % torch.cuda.get_device_capability() if torch.cuda.is_available() else "8.0"
newer = tuple(int(part) for part in release.split(".")[:2]) >= (2, 12)
print(torch.version.cuda or "cpu", release, arch, "c++20" if newer else "c++17")') ||
    { echo "gpu-check: $python cannot import torch; set PYTHON to the interpreter that has it" >&2; exit 1; }
read -r cuda torch arch cxx <<FACTS
$facts
FACTS
pyversion=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
toolkit=$("$python" -c 'import os; from pudev.image.verify_evidence import toolkit_version as v
print(v(os.environ["CUDA_HOME"]) or "")')
toolkit=${toolkit:-$cuda}
# The newest gcc this nvcc accepts, as its own host_config.h states it.
max_gcc=$(sed -n 's/.*gcc versions later than \([0-9]*\) are not supported.*/\1/p' \
    "$CUDA_HOME"/include/crt/host_config.h 2>/dev/null | head -n 1)
max_gcc=${max_gcc:-$(g++ -dumpversion 2>/dev/null | cut -d. -f1)}
: > "$work/no-lock.txt"  # the machine's packages are its own: nothing was installed from a lock
# The record as a plan would hand it to the build (pudev.building.record), of what this machine has.
planned=$("$python" - "$torch" "$cuda" "$pyversion" "$toolkit" "$arch" "$cxx" "${max_gcc:-0}" <<'EOF'
import json, sys
torch, cuda, python, toolkit, arch, cxx, max_gcc = sys.argv[1:]
print(json.dumps({"variant": "device", "image": "device", "torch": torch, "cuda": cuda, "python": python,
                  "default_toolkit": toolkit, "cuda_arch_list": arch, "cxx_standard": cxx, "mirror": "none",
                  "build_mirror": "none", "inputs": {}, "revision": "",
                  "toolkits": [{"version": toolkit, "max_gcc": int(max_gcc), "arch_list": arch}]}))
EOF
)
"$python" -m pudev.image.record write "$PUDEV_RECORD" --planned "$planned" --base-packages "$work/no-lock.txt" \
    --user "$(id -un)" > /dev/null || { echo "gpu-check: could not write the device record" >&2; exit 1; }

failed=""
remaining() { echo $((budget - ($(date +%s) - started))); }
not_run() {  # not_run NAME LOG REASON
    echo "== $1: $3" | tee -a "$2"
    failed="$failed $1(not-run)"
}
# step NAME LOG COMMAND...: run within what is left of the budget, append to LOG, note a failure.
step() {
    name=$1 log=$2
    shift 2
    left=$(remaining)
    if [ "$left" -le 0 ]; then
        not_run "$name" "$log" "not run, the ${budget}s budget is spent"
        return
    fi
    echo "== $name ($left s left)" >> "$log"
    timeout "$left" "$@" >> "$log" 2>&1
    rc=$?
    echo "== $name: exit $rc" >> "$log"
    [ "$rc" -eq 0 ] || failed="$failed $name"
}

checks="$out/checks.log"
{
    echo "== machine"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
    "$python" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)'
    "${CUDA_HOME}/bin/nvcc" --version 2>&1 | tail -n 2
    echo "CUDA_HOME=$CUDA_HOME max_gcc=${max_gcc:-unknown} g++ $(g++ -dumpversion 2>/dev/null) cpus $(nproc)"
    df -h /dev/shm | tail -n 1
} > "$checks" 2>&1
step verify "$checks" pudev verify
pudev verify --json > "$out/verify.json" 2>> "$checks"
step gpumon "$checks" pudev gpumon

bench() {  # bench MODEL [ARGS...]
    model=$1
    shift
    step "bench-$model" "$out/bench.log" pudev bench --model "$model" --out "$out/$model" \
        --data-dir "$work/data" --no-progress "$@"
}
step gpu-tests "$out/gpu-tests.log" pudev selftest -- -m gpu --color=no
bench resnet50
# A ViT-B/16 ladder compiles four more graphs: run it only with time to finish.
if [ "$(remaining)" -ge "${GPU_CHECK_VIT_SECONDS:-150}" ]; then
    bench vit_b_16 --batch-size 64
else
    not_run bench-vit_b_16 "$out/bench.log" "skipped, $(remaining)s of the budget left"
fi

tail -n 25 "$checks" "$out/gpu-tests.log" "$out/bench.log" 2>/dev/null
elapsed=$(($(date +%s) - started))
if [ -n "$failed" ]; then
    echo "gpu-check: FAILED:$failed (${elapsed}s; logs in $out)"
    exit 1
fi
echo "gpu-check: all steps passed (${elapsed}s; logs in $out)"
