"""`pudev dist`'s options (one-line errors, defaults that follow the hardware) and the torchrun command
it builds from them; no torch, no processes."""

from __future__ import annotations

import argparse
import re
from dataclasses import replace
from pathlib import Path

import pytest

from pudev.common.errors import PudevError
from pudev.image.dist.launch import torchrun_args
from pudev.image.dist.settings import parser, resolve

MIB, GIB = 1024**2, 1024**3


def _args(*argv: str) -> argparse.Namespace:
    return parser().parse_args(list(argv))


@pytest.mark.parametrize(("argv", "gpus", "message"), [
    (["--nnodes", "0"], 0, "--nnodes must be at least 1"),
    (["--nnodes", "two"], 0, "--nnodes must be a whole number"),
    (["--nnodes", "2"], 0, "--nnodes 2 needs --rdzv-endpoint"),
    (["--backend", "nccl"], 0, "--backend nccl needs a GPU"),
    (["--nproc-per-node", "4"], 2, "more ranks than the 2 GPU(s)"),
    (["--rdzv-endpoint", "host:0"], 0, "port from 1 to 65535"),
    (["--max-bytes", "6"], 0, "multiple of 4 bytes"),
    (["--join-timeout", "0"], 0, "--join-timeout must be at least 1"),
    (["--steps", "1"], 0, "--steps must be at least 2"),
])
def test_bad_options_are_one_line(argv: list[str], gpus: int, message: str) -> None:
    with pytest.raises(PudevError, match=re.escape(message)) as raised:
        resolve(_args(*argv), lambda: gpus)
    assert "\n" not in str(raised.value)


def _uncountable() -> int:
    raise AssertionError("the GPUs were counted (torch imported) before the options were checked")


@pytest.mark.parametrize("argv", [["--nnodes", "0"], ["--nnodes", "2"], ["--node-index", "1"], ["--max-bytes", "lots"],
                                  ["--rdzv-endpoint", "host:0"], ["--join-timeout", "0"], ["--steps", "1"],
                                  ["--iters", "x"], ["--nproc-per-node", "0"], ["--step-delay", "-1"]])
def test_options_that_need_no_gpu_count_fail_before_counting(argv: list[str]) -> None:
    with pytest.raises(PudevError):
        resolve(_args(*argv), _uncountable)


def test_defaults_follow_the_hardware() -> None:
    cpu, gpu = resolve(_args(), lambda: 0), resolve(_args(), lambda: 8)
    assert (cpu.backend, cpu.nproc_per_node, cpu.sizes[-1], cpu.endpoint) == ("gloo", 2, 4 * MIB, "127.0.0.1:29400")
    assert (gpu.backend, gpu.nproc_per_node, gpu.sizes[-1], gpu.iters) == ("nccl", 8, GIB, 20)
    assert cpu.join_timeout == 120  # not torchrun's 600 s


def test_torchrun_command_uses_c10d_and_each_nodes_address() -> None:
    settings = resolve(_args("--nnodes", "2", "--rdzv-endpoint", "127.0.0.1:29400", "--node-index", "1",
                             "--local-addr", "127.0.0.2", "--join-timeout", "30"), lambda: 0)
    args = torchrun_args(settings, Path("/tmp/run"))
    joined = " ".join(args)
    assert "--rdzv-backend c10d --rdzv-endpoint 127.0.0.1:29400" in joined and "--max-restarts 0" in joined
    assert "--rdzv-conf join_timeout=30,read_timeout=30,is_host=false" in joined
    assert "--local-addr 127.0.0.2" in joined and "--module pudev.image.dist.worker" in joined
    first = " ".join(torchrun_args(replace(settings, node_index=0, local_addr=None), Path("/tmp/run")))
    assert "is_host=true" in first and "--local-addr" not in first
