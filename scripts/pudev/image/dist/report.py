"""The table users read and the JSON scripts read, from one gathered run and its checks."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pudev.common.table import render_table
from pudev.image.dist.busbw import FORMULA, FORMULA_SOURCE, REFERENCES, human_size
from pudev.image.verify import Check, exit_code
from pudev.image.verify import render as render_checks


def sweep_table(rows: list[dict[str, Any]]) -> str:
    return render_table(["size", "time (us)", "algbw (GB/s)", "busbw (GB/s)"],
                        [[human_size(row["bytes"]), f"{row['seconds'] * 1e6:.1f}", f"{row['algbw_gbps']:.3f}",
                          f"{row['busbw_gbps']:.3f}"] for row in row_list(rows)])


def row_list(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: row["bytes"])


def references() -> list[str]:
    width = max(len(reference.system) for reference in REFERENCES)
    return [f"  {reference.system.ljust(width)}  ~{reference.busbw_gbps:.0f} GB/s  {reference.source}"
            for reference in REFERENCES]


def render(result: dict[str, Any], checks: list[Check]) -> str:
    world = result["world_size"]
    lines = [f"pudev dist: {world} ranks on {result['nnodes']} node(s), {result['backend']}, seed {result['seed']}",
             render_checks(checks), "",
             f"all_reduce bus bandwidth: float32, in place, the slowest of {world} ranks per call",
             sweep_table(result["sweep"]),
             f"{FORMULA} ({FORMULA_SOURCE}): an all_reduce moves 2(n-1)/n of the data through each rank,",
             "so busbw compares with one link's speed whatever the number of ranks.",
             "reference: nccl-tests all_reduce_perf peak busbw, 8 GPUs in one node, 1-8 GiB messages:",
             *references(), "PASSED" if exit_code(checks) == 0 else "FAILED"]
    return "\n".join(lines)


def payload(result: dict[str, Any], checks: list[Check]) -> dict[str, Any]:
    return {"ok": exit_code(checks) == 0, "checks": [asdict(check) for check in checks],
            "bandwidth": {"collective": "all_reduce", "dtype": "float32", "ranks": result["world_size"],
                          "formula": FORMULA, "formula_source": FORMULA_SOURCE, "rows": row_list(result["sweep"]),
                          "references": [asdict(reference) for reference in REFERENCES]},
            "run": result}
