"""`pudev dist` on one node: two gloo ranks on the CPU (every check, the table and --json), NCCL on every
GPU where there are GPUs, and one-line errors for bad input. tests/e2e/test_multinode.py runs two nodes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _dist(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    endpoint = f"127.0.0.1:{_free_port()}"  # never a fixed port: another run may hold it
    return subprocess.run(["pudev", "dist", "--rdzv-endpoint", endpoint, "--join-timeout", "60", *args],
                          capture_output=True, text=True, timeout=timeout, check=False)


def _checks(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {check["name"]: check for check in report["checks"]}


def test_two_gloo_ranks_pass_every_check() -> None:
    result = _dist("--backend", "gloo", "--nproc-per-node", "2", "--seed", "7", "--json")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout)
    checks = _checks(report)
    for name in ("ranks", "same software", "all_reduce", "all_gather", "broadcast", "ddp loss", "ddp weights",
                 "bus bandwidth", "transport"):
        assert checks[name]["status"] == "ok", checks[name]
    assert checks["/dev/shm"]["status"] in ("ok", "warn")  # gloo does not need it; the row says what would
    run = report["run"]
    assert (run["world_size"], run["nnodes"], run["backend"], run["seed"]) == (2, 1, "gloo", 7)
    assert run["ddp"]["last_loss"] < run["ddp"]["first_loss"]
    assert len({rank["digest"] for rank in run["ranks"]}) == 1
    sizes = [row["bytes"] for row in report["bandwidth"]["rows"]]
    assert sizes[-1] == 4 * 1024**2 and all(row["wrong"] == 0 for row in report["bandwidth"]["rows"])
    factors = [row["busbw_gbps"] / row["algbw_gbps"] for row in report["bandwidth"]["rows"]]
    assert factors == pytest.approx([1.0] * len(sizes))  # 2(n-1)/n is 1 for two ranks
    assert {ref["system"] for ref in report["bandwidth"]["references"]} == {"8x H100 SXM", "8x H200"}


def test_the_table_names_the_seed_the_formula_and_the_references() -> None:
    result = _dist("--backend", "gloo", "--nproc-per-node", "2", "--steps", "4", "--max-bytes", "64K")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "2 ranks on 1 node(s), gloo, seed 1234" in result.stdout
    assert "busbw = algbw * 2(n-1)/n (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md)" in \
        result.stdout
    assert "https://github.com/NVIDIA/nccl-tests/issues/212" in result.stdout
    assert result.stdout.rstrip().endswith("PASSED")
    assert "Traceback" not in result.stderr


def test_teardown_frees_the_group_and_ends_gloo_threads(tmp_path: Path) -> None:
    """One rank's DDP steps and report gather, then worker.teardown(): no torch module may still hold the group, and
    no gloo thread may outlive it (torch 2.15 names them), or one can abort the exit (worker.py says why)."""
    script = textwrap.dedent(f"""
        import json
        import torch
        import torch.distributed as dist
        from pudev.image.dist import ddp, gather, worker  # worker imports what DDP would import too late
        class Progress:
            phase = ""
        dist.init_process_group("gloo", init_method="file://{tmp_path}/store", rank=0, world_size=1)
        ddp.train(7, 2, torch.device("cpu"), Progress())
        keep = []
        gather.all_reports({{"rank": 0}}, None, keep)
        worker.teardown(keep)
        from torch.distributed.nn import functional
        held = [name for name, value in vars(functional).items()
                if any(isinstance(d, dist.ProcessGroup) for d in getattr(value, "__defaults__", None) or ())]
        print(json.dumps({{"held by torch.distributed.nn.functional": held, "gloo threads": worker.gloo_threads()}}))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert json.loads(result.stdout.splitlines()[-1]) == {"held by torch.distributed.nn.functional": [],
                                                          "gloo threads": []}


@pytest.mark.parametrize(("args", "message"), [
    (["--nnodes", "0"], "--nnodes must be at least 1, got '0'"),
    (["--nnodes", "2", "--rdzv-endpoint", ""], "--nnodes 2 needs --rdzv-endpoint HOST:PORT"),
    (["--max-bytes", "lots"], "--max-bytes: 'lots' is not a size"),
    (["--node-index", "1"], "--node-index 1 is not below --nnodes 1"),
])
def test_bad_input_is_one_line(args: list[str], message: str) -> None:
    result = subprocess.run(["pudev", "dist", *args], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr, result.stderr


@pytest.mark.gpu
def test_nccl_on_every_gpu(gpu: str) -> None:
    import torch

    result = _dist("--json", timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout)
    run = report["run"]
    assert (run["backend"], run["world_size"]) == ("nccl", torch.cuda.device_count())
    assert report["bandwidth"]["rows"][-1]["bytes"] >= 1024**3
    assert _checks(report)["transport"]["status"] in ("ok", "warn")
    assert any(rank["nccl"] and rank["nccl"]["version"] for rank in run["ranks"])  # rank 0 logs the version
