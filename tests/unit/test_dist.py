"""`pudev dist`'s pure parts on recorded data: bus bandwidth, NCCL's INFO lines, and the verdicts with
their fixes (no torch, no processes). Options and the torchrun command: test_dist_options.py."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pudev.image.dist import busbw, nccl_log
from pudev.image.dist.judge import judge
from pudev.image.dist.launch import _failures
from pudev.image.dist.report import payload, render
from pudev.image.verify import exit_code

MIB, GIB = 1024**2, 1024**3
IB_LOG = """NCCL version 2.21.5+cuda12.4
gpu1:77:90 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>
gpu1:77:90 [0] NCCL INFO Using network IB
gpu1:77:90 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
gpu1:77:90 [0] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/0/GDRDMA
"""
SOCKET_LOG = """gpu1:77:90 [0] NCCL INFO NET/IB : No device found.
gpu1:77:90 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
gpu1:77:90 [0] NCCL INFO Using network Socket
gpu1:77:90 [0] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [send] via NET/Socket/0
"""


def _rank(rank: int, nproc: int, **changes: Any) -> dict[str, Any]:
    facts = {"host": f"node{rank // nproc}", "fqdn": f"node{rank // nproc}", "resolves_to": ["10.0.0.1"],
             "shm_bytes": 8 * GIB, "ib_devices": [], "verbs_library": "", "env": {}}
    report = {"rank": rank, "local_rank": rank % nproc, "node": rank // nproc, "label": "", "pid": 100 + rank,
              "device": "cpu", "torch": "2.5.1", "torch_nccl": "2.21.5", "digest": "ab" * 32, "nccl": None,
              "collectives": {"all_reduce": "", "all_gather": "", "broadcast": ""}, "facts": facts}
    return {**report, **changes}


def result(nnodes: int = 2, nproc: int = 2, backend: str = "gloo", **changes: Any) -> dict[str, Any]:
    world = nnodes * nproc
    rows = [{"bytes": size, "seconds": size / 1e9, "algbw_gbps": 1.0, "busbw_gbps": busbw.allreduce_factor(world),
             "wrong": 0} for size in (4096, 4 * MIB)]
    return {"world_size": world, "nnodes": nnodes, "nproc_per_node": nproc, "backend": backend, "seed": 1234,
            "ddp": {"steps": 40, "first_loss": 0.26, "last_loss": 0.01, "digest": "ab" * 32}, "sweep": rows,
            "ranks": [_rank(rank, nproc) for rank in range(world)], **changes}


def _by_name(run: dict[str, Any]) -> dict[str, Any]:
    return {check.name: check for check in judge(run, "c10d at 127.0.0.1:29400")}


def test_bus_bandwidth_is_nccl_tests_formula() -> None:
    assert busbw.allreduce_factor(2) == 1.0 and busbw.allreduce_factor(8) == 1.75
    assert busbw.busbw(GIB, 0.01, 8) == pytest.approx(GIB / 0.01 / 1e9 * 1.75)
    assert busbw.sweep_sizes(64 * 1024, GIB)[-1] == GIB and busbw.sweep_sizes(4096, 4 * MIB)[:2] == [4096, 16384]
    assert busbw.parse_size("4M") == 4 * MIB and busbw.parse_size("1GiB") == GIB and busbw.human_size(GIB) == "1 GiB"
    assert {ref.busbw_gbps for ref in busbw.REFERENCES} == {480.0, 475.0}
    assert all(ref.source.startswith("https://github.com/NVIDIA/nccl-tests/issues/") for ref in busbw.REFERENCES)


def test_nccl_lines_name_the_network_and_paths() -> None:
    ib = nccl_log.parse(IB_LOG)
    assert (ib.version, ib.network, ib.gdrdma) == ("2.21.5+cuda12.4", "IB", True)
    assert ib.devices.startswith("[0]mlx5_0:1/IB") and ib.paths == ("P2P/CUMEM", "NET/IB")
    sockets = nccl_log.parse(SOCKET_LOG)
    assert (sockets.network, sockets.devices, sockets.paths) == ("Socket", "[0]eth0:10.0.0.1<0>", ("NET/Socket",))
    assert nccl_log.parse("").network == ""


def test_a_healthy_run_passes_and_renders() -> None:
    run = result()
    checks = judge(run, "c10d at 127.0.0.1:29400")
    assert exit_code(checks) == 0 and all(check.status == "ok" for check in checks), checks
    text = render(run, checks)
    assert "seed 1234" in text and "busbw = algbw * 2(n-1)/n" in text and text.endswith("PASSED")
    assert payload(run, checks)["bandwidth"]["references"][0]["busbw_gbps"] == 480.0


def test_wrong_results_and_diverged_weights_fail_with_the_ranks_named() -> None:
    run = result()
    run["ranks"][3]["collectives"]["broadcast"] = "4099 x float32: element 5 of 4099 is 1.0, expected 2.0"
    run["ranks"][2]["digest"] = "cd" * 32
    run["ddp"]["last_loss"] = 0.5
    checks = _by_name(run)
    assert checks["broadcast"].status == "fail" and "rank 3: 4099 x float32: element 5" in checks["broadcast"].detail
    assert "NCCL_P2P_DISABLE=1" in checks["broadcast"].fix
    assert checks["ddp weights"].status == "fail" and "rank 2: cdcdcdcdcdcd" in checks["ddp weights"].detail
    assert checks["ddp loss"].status == "fail"
    assert exit_code(list(checks.values())) == 1


def test_nodes_with_different_images_fail() -> None:
    run = result()
    for report in run["ranks"][2:]:
        report["torch"] = "2.4.1"
    check = _by_name(run)["same software"]
    assert check.status == "fail" and "node 1: torch 2.4.1" in check.detail and "same image" in check.fix


def test_nccl_over_sockets_between_nodes_names_the_fix() -> None:
    run = result(backend="nccl")
    for report in run["ranks"]:
        report["nccl"] = nccl_log.parse(SOCKET_LOG).__dict__ | {"paths": ["NET/Socket", "P2P/CUMEM"]}
    check = _by_name(run)["transport"]
    assert check.status == "warn" and "TCP sockets" in check.detail and "RDMA device plugin" in check.fix
    run["ranks"][0]["facts"]["ib_devices"] = ["uverbs0"]
    check = _by_name(run)["transport"]
    assert "InfiniBand devices are present" in check.detail and "NCCL_IB_DISABLE" in check.fix
    for report in run["ranks"]:
        report["nccl"] = nccl_log.parse(IB_LOG).__dict__
    assert _by_name(run)["transport"].status == "ok"


def test_small_shm_fails_nccl_and_warns_gloo() -> None:
    for backend, status in (("nccl", "fail"), ("gloo", "warn")):
        run = result(backend=backend)
        run["ranks"][2]["facts"]["shm_bytes"] = 64 * MIB
        check = _by_name(run)["/dev/shm"]
        assert check.status == status and "node 1: 64 MiB" in check.detail and "--shm-size" in check.fix


def test_another_nccl_than_torchs_is_reported() -> None:
    run = result(backend="nccl")
    run["ranks"][0]["nccl"] = nccl_log.parse("NCCL version 2.23.4+cuda12.6").__dict__
    check = _by_name(run)["nccl"]
    assert check.status == "warn" and "2.23.4+cuda12.6 was loaded" in check.detail


def test_slow_h100_all_reduce_is_compared_with_the_reference() -> None:
    run = result(nnodes=1, nproc=8, backend="nccl")
    for report in run["ranks"]:
        report["device"] = "cuda:0 NVIDIA H100 80GB HBM3"
    run["sweep"][-1]["busbw_gbps"] = 120.0
    check = _by_name(run)["bus bandwidth"]
    assert check.status == "warn" and "480 GB/s 8x H100 SXM" in check.detail and "nvidia-smi topo" in check.fix
    run["sweep"][-1]["busbw_gbps"] = 470.0
    assert _by_name(run)["bus bandwidth"].status == "ok"


def test_unresolvable_host_names_warn() -> None:
    run = result()
    run["ranks"][2]["facts"]["resolves_to"] = []
    check = _by_name(run)["host names"]
    assert check.status == "warn" and "node 1: node1 -> nothing" in check.detail and "--add-host" in check.fix


@dataclass
class _Failure:
    """The fields of torch's ProcessFailure that launch.py reads."""

    local_rank: int
    pid: int
    exitcode: int

    def signal_name(self) -> str:
        return signal.Signals(-self.exitcode).name


@dataclass
class _ChildFailed:
    failures: dict[int, _Failure]


@pytest.mark.parametrize("order", [(2, 3), (3, 2)])
def test_the_first_line_names_the_killed_rank_not_torchruns_sigterm(tmp_path: Path, order: tuple[int, int]) -> None:
    # CI on 2026-12-07: rank 3 was SIGKILLed; torchrun then sent rank 2 SIGTERM and reported both.
    by_rank = {2: _Failure(0, 13, -signal.SIGTERM), 3: _Failure(1, 14, -signal.SIGKILL)}
    error = _failures(_ChildFailed({rank: by_rank[rank] for rank in order}), tmp_path, 2)
    assert "rank 3 (pid 14) was killed by SIGKILL" in error.message
    assert "rank 2 (pid 13) was killed by SIGTERM" in error.detail


def test_a_rank_that_wrote_its_failure_follows_the_killed_one(tmp_path: Path) -> None:
    (tmp_path / "failure.0.txt").write_text("rank 4 on node 1: DDP step 3/600 failed: peer closed\n")
    error = _failures(_ChildFailed({5: _Failure(1, 21, -signal.SIGKILL), 4: _Failure(0, 20, 1)}), tmp_path, 2)
    assert "rank 5 (pid 21) was killed by SIGKILL" in error.message
    assert "DDP step 3/600 failed" in error.detail
