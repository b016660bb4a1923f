"""torchrun, run in this process so its failures arrive as exceptions, each turned into one line that
says what happened and what to do. The workers leave their reports in a private run folder."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

from pudev.common.errors import PudevError
from pudev.image.dist.settings import Settings


def torchrun_args(s: Settings, run_dir: Path) -> list[str]:
    conf = f"join_timeout={s.join_timeout},read_timeout={s.join_timeout}"  # reaching node 0's store counts as joining
    if s.node_index is not None:
        conf += f",is_host={'true' if s.node_index == 0 else 'false'}"  # no race to host the store
    return ["--nnodes", str(s.nnodes), "--nproc-per-node", str(s.nproc_per_node), "--rdzv-backend", "c10d",
            "--rdzv-endpoint", s.endpoint, "--rdzv-id", s.rdzv_id, "--rdzv-conf", conf, "--max-restarts", "0",
            *(["--local-addr", s.local_addr] if s.local_addr else []),
            "--module", "pudev.image.dist.worker", "--backend", s.backend, "--seed", str(s.seed), "--steps",
            str(s.steps), "--step-delay", str(s.step_delay), "--sizes", ",".join(map(str, s.sizes)), "--warmup",
            str(s.warmup), "--iters", str(s.iters), "--op-timeout", str(s.op_timeout), "--run-dir", str(run_dir),
            "--node-label", s.local_addr or ""]


def _nccl_logging(run_dir: Path) -> None:
    """NCCL's INFO lines, into the run folder: they name the transport it chose (nccl_log.py)."""
    if "NCCL_DEBUG" not in os.environ:
        os.environ["NCCL_DEBUG"] = "INFO"
        os.environ.setdefault("NCCL_DEBUG_SUBSYS", "INIT,NET")
    os.environ.setdefault("NCCL_DEBUG_FILE", str(run_dir / "nccl.%h.%p.log"))


def _stop(signum: int, frame: FrameType | None) -> None:
    name = signal.Signals(signum).name
    raise PudevError(f"stopped by signal {name} before the ranks started", exit_code=128 + signum)


def _failures(error: Any, run_dir: Path, nproc: int) -> PudevError:
    """One line per local rank: killed by a signal, its own failure line, or stopped by torchrun. The first
    line is the cause: a rank killed by SIGTERM comes after other kills, as torchrun itself sends SIGTERM
    to a node's other ranks once one fails, and may record them in the same failure."""
    failures = {failure.local_rank: (rank, failure) for rank, failure in error.failures.items()}
    first_rank = min(rank - failure.local_rank for rank, failure in failures.values())  # this node's rank 0
    own = {int(path.name.split(".")[1]): path.read_text().strip() for path in run_dir.glob("failure.*.txt")}
    killed: list[tuple[bool, str]] = []
    lines: list[str] = []
    for local in range(nproc):
        rank, failure = failures.get(local, (first_rank + local, None))
        if failure is not None and failure.exitcode < 0:
            name = failure.signal_name()
            killed.append((name == "SIGTERM", f"rank {rank} (pid {failure.pid}) was killed by {name}"))
        elif local in own:
            lines.append(own[local])
        elif failure is not None:
            lines.append(f"rank {rank} (pid {failure.pid}) exited with {failure.exitcode}")
        else:
            lines.append(f"rank {rank} was stopped by torchrun, which ends every rank of a node once one fails")
    first, *rest = [line for _, line in sorted(killed, key=lambda kill: kill[0])] + lines
    detail = "\n".join([*(f"  {line}" for line in rest),
                        "  one rank or node stopping stops every rank: the first line names the cause"])
    return PudevError(f"the run failed on this node: {first}", detail=detail, exit_code=1)


def _failure_lines(run_dir: Path) -> str:
    return "\n".join(f"  {path.read_text().strip()}" for path in sorted(run_dir.glob("failure.*.txt")))


def run(s: Settings) -> dict[str, Any]:
    """The gathered result (worker.py's result.json), or a PudevError saying why there is none."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous import api as rendezvous
    from torch.distributed.run import parse_args
    from torch.distributed.run import run as torchrun

    run_dir = Path(tempfile.mkdtemp(prefix="pudev-dist-"))
    where = f"the rendezvous '{s.rdzv_id}' at {s.endpoint}"
    previous = signal.signal(signal.SIGTERM, _stop)  # PID 1 in a pod ignores SIGTERM without a handler
    try:
        if s.backend == "nccl":
            _nccl_logging(run_dir)
        torchrun(parse_args(torchrun_args(s, run_dir)))
        return dict(json.loads((run_dir / "result.json").read_text()))
    except ChildFailedError as error:
        raise _failures(error, run_dir, s.nproc_per_node) from None
    except rendezvous.RendezvousTimeoutError:
        raise PudevError(f"not all {s.nnodes} nodes joined {where} within {s.join_timeout} s (--join-timeout): "
                         "start the same command on every node, and check each reaches that address", exit_code=1
                         ) from None
    except rendezvous.RendezvousClosedError:
        raise PudevError(f"{where} is closed: a run with this id ended there; use a new --rdzv-id", exit_code=1
                         ) from None
    except rendezvous.RendezvousError as error:
        cause = str(error.__cause__ or error).splitlines()[0].rstrip(".")
        if any(run_dir.glob("started.*")):
            lost = _failure_lines(run_dir)
            raise PudevError(f"lost {where} after the ranks started: {cause}; the node that hosts it (--node-index "
                             "0) stopped, or the network to it failed", detail=lost, exit_code=1) from None
        raise PudevError(f"could not reach {where} within {s.join_timeout} s: {cause}; the node started with "
                         "--node-index 0 hosts it: check that it runs and that this node reaches that address",
                         exit_code=1) from None
    except SignalException as error:
        raise PudevError(f"stopped by {signal.Signals(error.sigval).name}; the ranks on this node were stopped",
                         exit_code=128 + int(error.sigval)) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(run_dir, ignore_errors=True)
