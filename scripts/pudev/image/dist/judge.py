"""The verdicts on a gathered run (worker.py's result.json): pure, so tests/unit feeds it recorded runs.
Results here (ranks, software, collectives, training, bandwidth); the node's setup in judge_setup.py."""

from __future__ import annotations

from typing import Any

from pudev.image.dist.busbw import REFERENCES, human_size
from pudev.image.dist.judge_setup import by_node, setup_checks
from pudev.image.verify import Check

COLLECTIVES = ("all_reduce", "all_gather", "broadcast")  # collectives.py's checks, named without torch
WRONG_FIX = ("a wrong result without an error means a broken transport or GPU: rerun with NCCL_DEBUG=INFO, "
             "then with NCCL_P2P_DISABLE=1 or NCCL_SHM_DISABLE=1 to find which path, and check each GPU with "
             "`pudev verify`")
SAME_IMAGE_FIX = "run the same image (by digest) and the same `pudev dist` command on every node"
NVLINK_FIX = ("check that `nvidia-smi topo -m` shows NVLink (NV#) between every pair, that the host runs "
              "nvidia-fabricmanager, and that NCCL_P2P_DISABLE or NCCL_NVLS_ENABLE=0 are not set; the peak needs "
              "messages of 1 GiB or more (--max-bytes 8G)")


def _listing(values: dict[int, str], limit: int = 2) -> str:
    shown = [f"rank {rank}: {text}" for rank, text in sorted(values.items())[:limit]]
    more = len(values) - limit
    return "; ".join(shown) + (f"; and {more} more rank(s)" if more > 0 else "")


def _software(ranks: list[dict[str, Any]]) -> Check:
    builds = {(r["torch"], r["torch_nccl"]) for r in ranks}
    if len(builds) == 1:
        torch_version, nccl = builds.pop()
        return Check("same software", "ok", f"torch {torch_version}" + (f", NCCL {nccl}" if nccl else "")
                     + f" on all {len(ranks)} ranks")
    seen = {node: f"torch {r['torch']} NCCL {r['torch_nccl'] or '-'}" for node, r in by_node(ranks).items()}
    return Check("same software", "fail", "nodes differ: " + "; ".join(f"node {n}: {s}" for n, s in seen.items()),
                 SAME_IMAGE_FIX)


def _collectives(ranks: list[dict[str, Any]]) -> list[Check]:
    checks = []
    for name in COLLECTIVES:
        wrong = {r["rank"]: r["collectives"][name] for r in ranks if r["collectives"].get(name)}
        if wrong:
            checks.append(Check(name, "fail", f"wrong on {len(wrong)} of {len(ranks)} ranks: {_listing(wrong)}",
                                WRONG_FIX))
        else:
            checks.append(Check(name, "ok", f"exact on all {len(ranks)} ranks (float32 and int64, 1 to 262144 "
                                            "elements)"))
    return checks


def _training(result: dict[str, Any]) -> list[Check]:
    run, ranks = result["ddp"], result["ranks"]
    first, last = run["first_loss"], run["last_loss"]
    falls = f"loss {first:.4f} -> {last:.4f} in {run['steps']} steps (seed {result['seed']})"
    checks = [Check("ddp loss", "ok", falls) if last < first else
              Check("ddp loss", "fail", f"the loss did not fall: {falls}",
                    "a seeded run whose loss rises points at wrong gradients: see the all_reduce row")]
    digests = {r["rank"]: r["digest"][:12] for r in ranks}
    if len(set(digests.values())) == 1:
        checks.append(Check("ddp weights", "ok", f"identical on all {len(ranks)} ranks (sha256 "
                                                 f"{digests[0]})"))
    else:
        checks.append(Check("ddp weights", "fail", f"final weights differ: {_listing(digests, limit=4)}",
                            SAME_IMAGE_FIX))
    return checks


def _bandwidth(result: dict[str, Any]) -> Check:
    rows, world = result["sweep"], result["world_size"]
    wrong = [human_size(row["bytes"]) for row in rows if row["wrong"]]
    if wrong:
        return Check("bus bandwidth", "fail", f"the sweep's all_reduce of zeros returned non-zeros at "
                                              f"{', '.join(wrong)}", WRONG_FIX)
    if world == 1:
        return Check("bus bandwidth", "skip", "1 rank: busbw = algbw x 2(n-1)/n is 0; run 2 or more ranks")
    best = max(rows, key=lambda row: row["busbw_gbps"])
    detail = (f"peak busbw {best['busbw_gbps']:.2f} GB/s at {human_size(best['bytes'])} (algbw "
              f"{best['algbw_gbps']:.2f} GB/s), {world} ranks")
    if result["backend"] == "gloo":
        return Check("bus bandwidth", "ok", detail + "; gloo on CPU, not comparable with GPU figures")
    gpu = result["ranks"][0]["device"]
    for reference in REFERENCES:
        model = reference.system.split()[1]
        if result["nnodes"] == 1 and world == 8 and model in gpu and best["busbw_gbps"] < reference.busbw_gbps / 2:
            return Check("bus bandwidth", "warn", f"{detail}: under half the ~{reference.busbw_gbps:.0f} GB/s "
                                                  f"{reference.system} reach", NVLINK_FIX)
    return Check("bus bandwidth", "ok", detail)


def judge(result: dict[str, Any], rendezvous: str) -> list[Check]:
    ranks = result["ranks"]
    shape = (f"{result['world_size']} ranks = {result['nnodes']} node(s) x {result['nproc_per_node']}, "
             f"{result['backend']}; {rendezvous}")
    return [Check("ranks", "ok", shape), _software(ranks), *_collectives(ranks), *_training(result),
            _bandwidth(result), *setup_checks(result)]
