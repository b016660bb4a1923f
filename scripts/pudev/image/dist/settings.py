"""`pudev dist`'s options, checked once into Settings; bad input is one line naming the flag."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from pudev.common.errors import PudevError
from pudev.image.dist.busbw import human_size, parse_size, sweep_sizes

DEFAULT_ENDPOINT = "127.0.0.1:29400"
# (smallest, largest) message of the sweep: to 1 GiB on GPUs, where NVLink peaks; a few MiB on CPUs.
GPU_SWEEP, CPU_SWEEP = (64 * 1024, 1024**3), (4 * 1024, 4 * 1024**2)
LARGEST = 64 * 1024**3


@dataclass(frozen=True)
class Settings:
    nnodes: int
    nproc_per_node: int
    backend: str  # gloo or nccl
    endpoint: str
    rdzv_id: str
    local_addr: str | None
    node_index: int | None
    join_timeout: int
    op_timeout: int
    sizes: list[int]
    warmup: int
    iters: int
    steps: int
    seed: int
    step_delay: float
    json: bool


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, like every other pudev error
        print(f"pudev dist: error: {message} (see pudev dist --help)", file=sys.stderr)
        sys.exit(2)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pudev dist", description="Check distributed training: torchrun with the c10d rendezvous, "
                "exact collectives, a seeded DDP run, an all_reduce bandwidth sweep, /dev/shm and NCCL.")
    p.add_argument("--nnodes", default="1", help="number of nodes (default 1)")
    p.add_argument("--nproc-per-node", default="auto", help="ranks per node: a number, or auto (one per GPU; 2 on CPU)")
    p.add_argument("--backend", default="auto", choices=["auto", "gloo", "nccl"], help="auto: nccl on GPUs, else gloo")
    p.add_argument("--rdzv-endpoint", default="", help=f"HOST:PORT every node reaches (default {DEFAULT_ENDPOINT} "
                                                       "on one node)")
    p.add_argument("--rdzv-id", default="pudev-dist", help="the run's id: the same on every node")
    p.add_argument("--local-addr", default="", help="this node's own address; nodes sharing a host name need one each")
    p.add_argument("--node-index", default="", help="0 on the node that hosts the rendezvous store (the endpoint's); "
                                                    "others connect to it (default: decided by host name)")
    p.add_argument("--join-timeout", default="120", help="seconds to wait for every node to join (default 120)")
    p.add_argument("--op-timeout", default="120", help="seconds a collective may wait for a peer (default 120)")
    p.add_argument("--max-bytes", default="", help="largest all_reduce of the sweep (default 1G on GPUs, 4M on CPU)")
    p.add_argument("--iters", default="", help="timed calls per size (default 20 on GPUs, 5 on CPU)")
    p.add_argument("--steps", default="40", help="DDP training steps (default 40)")
    p.add_argument("--seed", default="1234", help="seed of the weights and data (default 1234)")
    p.add_argument("--step-delay", default="0", help="seconds to pause after each DDP step (a longer run to watch)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def _number(flag: str, text: str, low: float, kind: type = int) -> int | float:
    try:
        value = kind(text)
    except ValueError:
        raise PudevError(f"{flag} must be a {'whole ' if kind is int else ''}number, got {text!r}") from None
    if value < low:
        raise PudevError(f"{flag} must be at least {low}, got {text!r}")
    return value  # type: ignore[no-any-return]


def _endpoint(text: str, nnodes: int) -> str:
    if not text:
        if nnodes > 1:
            raise PudevError(f"--nnodes {nnodes} needs --rdzv-endpoint HOST:PORT, an address every node reaches "
                             "(node 0's, which hosts the rendezvous)")
        return DEFAULT_ENDPOINT
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise PudevError(f"--rdzv-endpoint must be HOST:PORT with a port from 1 to 65535, got {text!r}")
    return text


def resolve(args: argparse.Namespace, visible_gpus: Callable[[], int]) -> Settings:
    """Settings from the parsed options and the GPUs this node sees. Every check that needs no GPU count
    comes first: counting GPUs imports torch (seconds), and a typo should fail at once."""
    nnodes = int(_number("--nnodes", args.nnodes, 1))
    index = None if args.node_index == "" else int(_number("--node-index", args.node_index, 0))
    if index is not None and index >= nnodes:
        raise PudevError(f"--node-index {index} is not below --nnodes {nnodes}")
    try:
        asked_largest = parse_size(args.max_bytes) if args.max_bytes else None
    except ValueError as error:
        raise PudevError(f"--max-bytes: {error}") from None
    endpoint = _endpoint(args.rdzv_endpoint, nnodes)
    join_timeout = int(_number("--join-timeout", args.join_timeout, 1))
    op_timeout = int(_number("--op-timeout", args.op_timeout, 1))
    asked_iters = int(_number("--iters", args.iters, 1)) if args.iters else None
    steps, seed = int(_number("--steps", args.steps, 2)), int(_number("--seed", args.seed, 0))
    step_delay = float(_number("--step-delay", args.step_delay, 0, float))
    asked_nproc = None if args.nproc_per_node == "auto" else int(_number("--nproc-per-node", args.nproc_per_node, 1))
    gpus = visible_gpus()
    backend = args.backend if args.backend != "auto" else ("nccl" if gpus else "gloo")
    if backend == "nccl" and not gpus:
        raise PudevError("--backend nccl needs a GPU and none is visible: run the container with --gpus all, "
                         "or use --backend gloo")
    nproc = asked_nproc or gpus or 2
    if backend == "nccl" and nproc > gpus:
        raise PudevError(f"--nproc-per-node {nproc} asks for more ranks than the {gpus} GPU(s) here (one rank per GPU)")
    smallest, default_largest = GPU_SWEEP if backend == "nccl" else CPU_SWEEP
    largest = default_largest if asked_largest is None else asked_largest
    if largest % 4 or not 4 <= largest <= LARGEST:
        raise PudevError(f"--max-bytes must be a multiple of 4 bytes up to {human_size(LARGEST)}, "
                         f"got {args.max_bytes!r}")
    iters = asked_iters or (20 if backend == "nccl" else 5)
    return Settings(
        nnodes=nnodes, nproc_per_node=nproc, backend=backend, endpoint=endpoint,
        rdzv_id=args.rdzv_id or "pudev-dist", local_addr=args.local_addr or None, node_index=index,
        join_timeout=join_timeout, op_timeout=op_timeout,
        sizes=sweep_sizes(min(smallest, largest), largest), warmup=max(1, iters // 4), iters=iters,
        steps=steps, seed=seed,
        step_delay=step_delay, json=args.json)
