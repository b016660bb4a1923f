"""One rank of `pudev dist`, started by torchrun: join, check the collectives, train, time the sweep,
then gather every rank's report and (local rank 0) write it for this node's `pudev dist` to print.
A failure is one line naming the rank, its node, the phase and the cause, also left in the run folder."""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

# Imported before init_process_group on purpose. Its collectives default to `group=group.WORLD`, evaluated at import:
# torch 2.15's DDP imports it lazily (via torch._dynamo), after the group exists, and ten defaults then hold the group
# for good. destroy_process_group no longer frees it, gloo's worker threads outlive main(), and one that drops a
# finished collective's tensors during interpreter shutdown needs the GIL, gets pthread_exit and aborts the process:
# "terminate called without an active exception" (https://github.com/pytorch/pytorch/issues/190489). Imported now,
# the defaults are None (no group yet). teardown() frees the group; main() checks that its threads are gone.
import torch.distributed.nn.functional

from pudev.image.dist import collectives, ddp, gather, nccl_log, node_report, sweep


class Progress:
    phase = "joining the process group"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pudev.image.dist.worker")
    parser.add_argument("--backend", choices=["gloo", "nccl"], required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--step-delay", type=float, default=0.0)
    parser.add_argument("--sizes", required=True, help="comma-separated message sizes in bytes")
    parser.add_argument("--warmup", type=int, required=True)
    parser.add_argument("--iters", type=int, required=True)
    parser.add_argument("--op-timeout", type=float, required=True)
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--node-label", default="")
    return parser.parse_args(argv)


def _say(text: str) -> None:
    sys.stderr.write(f"pudev dist: {text}\n")  # one write, so ranks' lines do not interleave; stdout is the table's
    sys.stderr.flush()


def _nccl_choice(run_dir: Path) -> dict[str, Any] | None:
    logs = sorted(run_dir.glob(f"nccl.*.{os.getpid()}.log"))  # NCCL_DEBUG_FILE=nccl.%h.%p.log
    return asdict(nccl_log.parse(logs[0].read_text(errors="replace"))) if logs else None


def _nccl_version() -> str:
    try:
        return ".".join(map(str, torch.cuda.nccl.version())) if dist.is_nccl_available() else ""
    except (RuntimeError, AttributeError):
        return ""


def _meaning(cause: str) -> str:
    lowered = cause.lower()
    if any(text in lowered for text in ("closed by peer", "reset by peer", "broken pipe", "connection refused")):
        return " (another rank stopped, or its node went away)"
    if "timed out" in lowered or "timeout" in lowered:
        return " (a peer did not answer within --op-timeout)"
    return ""


def gloo_threads() -> list[str]:
    """The threads of this process that belong to gloo (torch 2.15 names them pt_gloo_runloop, gloo_tcp_loop)."""
    tasks = Path(f"/proc/{os.getpid()}/task")
    names = [comm.read_text().strip() for comm in tasks.glob("*/comm")] if tasks.is_dir() else []
    return sorted(name for name in names if "gloo" in name)


def teardown(keep: list[torch.Tensor]) -> None:
    """Free every process group while Python is whole: destroy_process_group drops torch's last reference, and gloo's
    destructor joins its worker threads with the GIL released (one dropping a finished collective's tensors takes
    it). The caller holds no group; the collection frees any DDP reducer left in a reference cycle (it holds one)."""
    gc.collect()
    dist.destroy_process_group()
    keep.clear()


def run(args: argparse.Namespace, progress: Progress) -> int:
    rank, world, local_rank = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
    node = int(os.environ["GROUP_RANK"])
    (args.run_dir / f"started.{local_rank}").touch()  # the launcher tells "never started" from "lost midway"
    device = torch.device("cuda", local_rank) if args.backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)  # one rank per GPU
    dist.init_process_group(args.backend, timeout=timedelta(seconds=args.op_timeout))
    # The reports travel over gloo: NCCL would need them on the GPU first.
    objects = dist.new_group(backend="gloo") if args.backend == "nccl" else None
    where = f"node {node} ({args.node_label or os.uname().nodename})"
    name = f"{device} {torch.cuda.get_device_name(device)}" if device.type == "cuda" else "cpu"
    _say(f"rank {rank}/{world} is local rank {local_rank} on {where}, pid {os.getpid()}, {name}")
    if rank == 0:
        _say(f"checking collectives, then {args.steps} DDP steps (seed {args.seed}), then the all_reduce sweep")
    wrong = collectives.run(rank, world, device, progress)
    if rank == 0:
        _say(f"collectives done; DDP training, {args.steps} steps")
    training = ddp.train(args.seed, args.steps, device, progress, step_delay=args.step_delay)
    rows = sweep.run([int(size) for size in args.sizes.split(",")], warmup=args.warmup, iters=args.iters,
                     device=device, progress=progress)
    report = {"rank": rank, "local_rank": local_rank, "node": node, "label": args.node_label, "pid": os.getpid(),
              "device": name, "torch": torch.__version__, "torch_nccl": _nccl_version(),
              "collectives": wrong, "digest": training["digest"], "nccl": _nccl_choice(args.run_dir),
              "facts": asdict(node_report.collect())}
    progress.phase = "gathering the reports"
    keep: list[torch.Tensor] = []  # alive until after destroy_process_group (gather.py says why)
    reports = gather.all_reports(report, objects, keep)
    if local_rank == 0:
        result = {"world_size": world, "nnodes": int(os.environ["GROUP_WORLD_SIZE"]),
                  "nproc_per_node": int(os.environ["LOCAL_WORLD_SIZE"]), "backend": args.backend,
                  "seed": args.seed, "ddp": training, "sweep": rows, "ranks": reports}
        (args.run_dir / "result.json").write_text(json.dumps(result, indent=1))
    objects = None  # the NCCL run's gloo group: teardown() must drop the last reference
    teardown(keep)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    progress = Progress()
    try:
        code = run(args, progress)
    except Exception as error:  # a collective failed or timed out: say where and why, in one line
        cause = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
        line = (f"rank {os.environ.get('RANK', '?')} on node {os.environ.get('GROUP_RANK', '?')} "
                f"({args.node_label or os.uname().nodename}): {progress.phase} failed: {cause}{_meaning(cause)}")
        _say(line)
        (args.run_dir / f"failure.{os.environ.get('LOCAL_RANK', '0')}.txt").write_text(line + "\n")
        code = 1
    if left := gloo_threads():
        # Still running (a failed run skips teardown(), or a torch holds the group somewhere else): interpreter
        # shutdown could abort the process (see the import above) and hide the exit status, so skip it.
        if code == 0:
            _say(f"note: gloo threads outlived destroy_process_group ({', '.join(left)}); exiting without "
                 "interpreter shutdown")
        sys.stdout.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
