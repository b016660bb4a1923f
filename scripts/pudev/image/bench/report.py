"""Judge and present ladder results: table, JSON, PNG. No torch here, so tests/unit
can check the judgements on recorded results."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pudev.common.table import render_table

MIB = 1024**2
DATA_BOUND_FRACTION = 0.3


def loss_verdict(losses: list[float], window: int = 3) -> str:
    """'ok' when every loss is finite and the job learned (the last steps beat the first)."""
    if not losses or not all(math.isfinite(value) for value in losses):
        return "loss not finite"
    window = max(1, min(window, len(losses) // 2))
    start, end = sum(losses[:window]) / window, sum(losses[-window:]) / window
    return "ok" if end < start else "loss not decreasing"


def summarise(rungs: list[dict[str, Any]]) -> dict[str, Any]:
    """Speed-ups over the baseline, each rung's verdict, and what limits the top rung."""
    baseline = rungs[0]["images_per_s"]
    for previous, rung in zip([None, *rungs], rungs, strict=False):
        rung["speedup"] = rung["images_per_s"] / baseline
        rung["verdict"] = loss_verdict(rung["losses"])
        if rung["name"] == "checkpoint" and previous is not None:
            saved = previous["peak_memory_bytes"] - rung["peak_memory_bytes"]
            rung["checkpoint_memory_saved_bytes"] = saved
            rung["checkpoint_speed_cost"] = 1 - rung["images_per_s"] / previous["images_per_s"]
    fastest = max(rungs, key=lambda rung: rung["images_per_s"])
    top = rungs[-1]
    return {
        "top_speedup": top["speedup"], "best_rung": fastest["name"], "best_speedup": fastest["speedup"],
        "data_bound": top["data_wait_fraction"] > DATA_BOUND_FRACTION,
        "all_learning": all(rung["verdict"] == "ok" for rung in rungs),
    }


def render(rungs: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    rows = []
    for rung in rungs:
        util = "-" if rung["gpu_utilization"] is None else f"{rung['gpu_utilization']:.0f}%"
        memory = "-" if not rung["peak_memory_bytes"] else f"{rung['peak_memory_bytes'] / MIB:.0f}"
        rows.append([f"{rung['rung']} {rung['name']}", f"{rung['median_step_s'] * 1000:.1f}",
                     f"{rung['images_per_s']:.1f}", f"{rung['speedup']:.2f}x", memory, util,
                     f"{rung['data_wait_fraction'] * 100:.0f}%",
                     f"{rung['losses'][0]:.3f} -> {rung['losses'][-1]:.3f}", rung["verdict"]])
    table = render_table(["rung", "step ms", "img/s", "speed-up", "peak MiB", "GPU util", "data wait",
                          "loss", "check"], rows)
    lines = [table, f"top rung: {summary['top_speedup']:.2f}x the baseline; fastest: {summary['best_rung']} "
                    f"({summary['best_speedup']:.2f}x)"]
    checkpoint = next((r for r in rungs if "checkpoint_memory_saved_bytes" in r), None)
    if checkpoint is not None and checkpoint["peak_memory_bytes"]:
        lines.append(f"checkpointing saved {checkpoint['checkpoint_memory_saved_bytes'] / MIB:.0f} MiB of peak memory "
                     f"for {checkpoint['checkpoint_speed_cost'] * 100:.0f}% of the speed")
    if summary["data_bound"]:
        lines.append(f"the top rung is data-bound: {rungs[-1]['data_wait_fraction'] * 100:.0f}% of each step waits "
                     "on data (more CPUs, GPU decoding or smaller JPEGs would help)")
    if not summary["all_learning"]:
        lines.append("WARNING: a rung did not learn (see the check column): its speed is not worth having")
    return "\n".join(lines)


def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.write_text(json.dumps(payload, indent=2) + "\n")


def write_chart(path: Path, rungs: list[dict[str, Any]], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (speed, loss) = plt.subplots(1, 2, figsize=(13, 4.5))
    names = [f"{r['rung']} {r['name']}" for r in rungs]
    bars = speed.bar(names, [r["images_per_s"] for r in rungs], color="#4c72b0")
    for bar, rung in zip(bars, rungs, strict=True):
        speed.annotate(f"{rung['speedup']:.2f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                       ha="center", va="bottom")
    speed.set_ylabel("images/s (median step)")
    speed.set_title(title)
    speed.tick_params(axis="x", rotation=30)
    for rung in rungs:
        loss.plot(rung["losses"], label=rung["name"])
    loss.set_xlabel("step")
    loss.set_ylabel("training loss")
    loss.set_title("same seeded job on every rung")
    loss.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
