#!/bin/sh
# Stress `pudev dist` with two gloo ranks on the CPU in every stand-in profile's built image: RUNS
# runs per profile, each in a fresh container held to one CPU (where teardown races show most), and a
# count of the failures. Not part of `make test`: about 15 s a run. Build the images first
# (make build-local). Usage, from the repository root:
#   scripts/dist-stress.sh [-n RUNS] [-p PROFILE]... [-w | -d DIR] [OUT]
#     -n RUNS     runs per profile (default: $RUNS, else 30)
#     -p PROFILE  only this profile (repeatable; default: every one `pudev profiles` lists)
#     -w          run this checkout's scripts/pudev/image/dist, bind-mounted read-only over the
#                 image's copy: a change tested without a rebuild (the JSON says which code ran)
#     -d DIR      the same with another copy of that folder, e.g. an older revision's (git archive)
#     OUT         the JSON written (default benchmarks/dist-stress.json): date, machine, and per
#                 profile the image, its torch, runs, failures, mean seconds per run (container
#                 start included) and the first failure's last lines
# A run still going after 15 minutes is stopped (exit 124) and counted as failed: a hang.
# A run the engine cuts short (docker exits 125, or a daemon restart stops the container) is run
# again once the engine answers, and counted apart (interrupted_by_the_engine), not as a failure.
# Environment: PUDEV (default .venv/bin/pudev), PYTHON (default .venv/bin/python), PUDEV_DOCKER
# (the docker client, default `docker`), PORT (the rendezvous port inside the container, 29500).
# Exit status: 0 when every run passed, 1 when any failed, 2 on bad usage, a missing image or an engine gone.
set -eu
pudev=${PUDEV:-.venv/bin/pudev}
python=${PYTHON:-.venv/bin/python}
docker=${PUDEV_DOCKER:-docker}
port=${PORT:-29500}
runs=${RUNS:-30}
profiles=""
mount=""

say() { printf 'dist-stress: %s\n' "$*" >&2; }
usage() { sed -n '6,14p' "$0" >&2; exit 2; }

while getopts n:p:wd: option; do
    case $option in
        n) runs=$OPTARG ;;
        p) profiles="$profiles $OPTARG" ;;
        w) mount=scripts/pudev/image/dist ;;
        d) mount=$OPTARG ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
out=${1:-benchmarks/dist-stress.json}
case $runs in '' | *[!0-9]* | 0) say "-n wants a whole number above 0, got '$runs'"; exit 2 ;; esac
[ -n "$profiles" ] || profiles=$("$pudev" profiles)

dist_code="image"
if [ "$mount" = scripts/pudev/image/dist ]; then
    dist_code="working tree: scripts/pudev/image/dist bind-mounted at revision $(git rev-parse --short HEAD)"
    [ -z "$(git status --porcelain -- scripts/pudev/image/dist)" ] || dist_code="$dist_code plus uncommitted changes"
elif [ -n "$mount" ]; then
    dist_code="$mount bind-mounted"
fi
if [ -n "$mount" ]; then
    [ -f "$mount/worker.py" ] || { say "$mount holds no worker.py: not a copy of scripts/pudev/image/dist"; exit 2; }
    mount=$(cd "$mount" && pwd)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: > "$work/profiles.tsv"

now() { "$python" -c 'import time; print(f"{time.time():.3f}")'; }

# After an engine restart (another job's host setup, say): up to 5 minutes for it to answer again.
wait_for_engine() {
    waited=0
    until "$docker" info > /dev/null 2>&1; do
        [ "$waited" -lt 300 ] || { say "the docker engine has not answered for $waited s: giving up"; exit 2; }
        sleep 5
        waited=$((waited + 5))
    done
}

# The image a profile builds: the first --tag of `pudev plan` (no build, no container).
image_of() {
    "$pudev" plan --profile "$1" | sed -n 's/^ *--tag \([^ ]*\).*/\1/p' | head -n 1
}

for profile in $profiles; do
    image=$(image_of "$profile")
    if [ -z "$image" ] || ! "$docker" image inspect "$image" > /dev/null 2>&1; then
        say "profile $profile: no built image${image:+ $image}; run: $pudev build --profile $profile"
        exit 2
    fi
    image_id=$("$docker" image inspect --format '{{.Id}}' "$image")
    variant=$("$docker" image inspect --format '{{index .Config.Labels "org.pudev.variant"}}' "$image")
    # --hostname localhost: with --network none the container's own name resolves nowhere, and torchrun hands the
    # ranks that name as the store's address (they then retry for 5 minutes). Fault handler: a rank that aborts
    # leaves every Python thread's stack in the excerpt.
    set -- run --rm --cpus 1 --network none --hostname localhost --shm-size 2g --env PYTHONFAULTHANDLER=1
    if [ -n "$mount" ]; then
        inside=$("$docker" run --rm --network none "$image" python -c \
            'import os, pudev.image.dist as d; print(os.path.dirname(d.__file__))')
        set -- "$@" --volume "$mount:$inside:ro"
    fi
    torch=$("$docker" "$@" "$image" python -c 'import torch; print(torch.__version__)')
    say "profile $profile: $image ($variant, torch $torch, $image_id), $runs runs, dist code from the $dist_code"
    failures=0
    interrupted=0
    seconds=0
    excerpt="$work/$profile.excerpt"
    : > "$excerpt"
    run=0
    while [ "$run" -lt "$runs" ]; do
        started=$(now)
        if "$docker" "$@" "$image" timeout -k 30 900 pudev dist --backend gloo --nproc-per-node 2 \
            --rdzv-endpoint "127.0.0.1:$port" --join-timeout 60 > "$work/run.log" 2>&1; then
            status=0
        else
            status=$?
        fi
        # Not pudev dist's doing: docker could not run the container (125), or the engine stopped it (a
        # daemon restart sends SIGTERM, which torchrun logs). Such a run is run again, and counted apart.
        if [ "$status" -eq 125 ] || grep -q -e 'Received 15 death signal' -e 'Cannot connect to the Docker daemon' \
            "$work/run.log" || { [ "$status" -ne 0 ] && ! "$docker" info > /dev/null 2>&1; }; then
            interrupted=$((interrupted + 1))
            say "profile $profile: run $((run + 1))/$runs interrupted by the engine (exit $status); running it again"
            [ "$interrupted" -le 10 ] || { say "the engine interrupted $interrupted runs: giving up"; exit 2; }
            wait_for_engine
            continue
        fi
        run=$((run + 1))
        seconds=$(awk -v sum="$seconds" -v start="$started" -v end="$(now)" 'BEGIN { print sum + end - start }')
        if [ "$status" -eq 0 ]; then
            say "profile $profile: run $run/$runs passed"
        else
            failures=$((failures + 1))
            say "profile $profile: run $run/$runs FAILED (exit $status)"
            if [ ! -s "$excerpt" ]; then
                { echo "run $run, exit status $status; its last lines:"; tail -n 60 "$work/run.log"; } > "$excerpt"
            fi
        fi
    done
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$profile" "$image" "$image_id" "$variant" "$torch" "$runs" \
        "$failures" "$seconds" "$excerpt" "$interrupted" >> "$work/profiles.tsv"
done

total_failures=$(awk -F '\t' '{ sum += $7 } END { print sum + 0 }' "$work/profiles.tsv")
mkdir -p "$(dirname "$out")"
DOCKER_VERSION=$("$docker" version --format 'client {{.Client.Version}}, server {{.Server.Version}}' 2>&1 || true) \
NPROC=$(nproc) DIST_CODE=$dist_code PORT=$port "$python" - "$work/profiles.tsv" "$out" <<'EOF'
import json, os, platform, sys
from datetime import datetime, timezone

tsv, out = sys.argv[1:]
with open("/proc/meminfo") as meminfo:
    memory_kib = int(next(line for line in meminfo if line.startswith("MemTotal:")).split()[1])
profiles = {}
for line in open(tsv).read().splitlines():
    profile, image, image_id, variant, torch, runs, failures, seconds, excerpt, interrupted = line.split("\t")
    text = open(excerpt, errors="replace").read().rstrip("\n")
    profiles[profile] = {
        "image": image, "image_id": image_id, "variant": variant, "torch": torch, "runs": int(runs),
        "failures": int(failures), "seconds_per_run": round(float(seconds) / int(runs), 1),
        "interrupted_by_the_engine": int(interrupted),
        "first_failure": text.splitlines() if text else None}
record = {
    "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    "machine": {"nproc": int(os.environ["NPROC"]), "memory_gib": round(memory_kib / 2**20, 1),
                "kernel": platform.release(), "docker": os.environ["DOCKER_VERSION"]},
    "command": (f"docker run --rm --cpus 1 --network none --hostname localhost --shm-size 2g --env PYTHONFAULTHANDLER=1 "
                f"IMAGE timeout -k 30 900 pudev dist "
                f"--backend gloo --nproc-per-node 2 --rdzv-endpoint 127.0.0.1:{os.environ['PORT']} --join-timeout 60"),
    "dist_code": os.environ["DIST_CODE"],
    "profiles": profiles}
with open(out, "w") as file:
    file.write(json.dumps(record, indent=1) + "\n")
EOF
say "wrote $out: $total_failures failure(s)"
[ "$total_failures" -eq 0 ]
