"""The ladder's judgements on recorded rung results (the CPU smoke run is in tests/image)."""

from __future__ import annotations

from typing import Any

from pudev.image.bench.report import loss_verdict, render, summarise


def _rung(index: int, name: str, images_per_s: float, *, memory: int = 10_000_000_000, data: float = 0.05,
          losses: list[float] | None = None) -> dict[str, Any]:
    return {"rung": index, "name": name, "median_step_s": 128 / images_per_s, "images_per_s": images_per_s,
            "peak_memory_bytes": memory, "gpu_utilization": 90.0, "data_wait_fraction": data,
            "losses": losses or [2.3, 2.1, 1.9, 1.2, 0.8, 0.5], "workers": 8, "settings": {}}


def test_speedups_checkpoint_trade_and_verdicts() -> None:
    rungs = [_rung(0, "baseline", 400), _rung(1, "loader", 700), _rung(2, "compile", 900), _rung(3, "amp", 1500),
             _rung(4, "channels_last", 1700, memory=9_000_000_000), _rung(5, "checkpoint", 1400, memory=5_000_000_000)]
    summary = summarise(rungs)
    assert rungs[3]["speedup"] == 3.75 and summary["best_rung"] == "channels_last"
    assert summary["top_speedup"] == 3.5 and summary["all_learning"] and not summary["data_bound"]
    assert rungs[5]["checkpoint_memory_saved_bytes"] == 4_000_000_000
    assert abs(rungs[5]["checkpoint_speed_cost"] - (1 - 1400 / 1700)) < 1e-9
    text = render(rungs, summary)
    assert "3.50x" in text and "checkpointing saved 3815 MiB" in text


def test_data_bound_top_rung_is_called_out() -> None:
    rungs = [_rung(0, "baseline", 400, data=0.6), _rung(1, "loader", 500, data=0.55)]
    summary = summarise(rungs)
    assert summary["data_bound"] and "data-bound: 55%" in render(rungs, summary)


def test_fast_but_wrong_rung_is_visible() -> None:
    rungs = [_rung(0, "baseline", 400), _rung(1, "amp", 2000, losses=[2.3, float("nan"), 2.0])]
    summary = summarise(rungs)
    assert rungs[1]["verdict"] == "loss not finite" and not summary["all_learning"]
    assert "did not learn" in render(rungs, summary)


def test_loss_verdicts() -> None:
    assert loss_verdict([2.0, 1.9, 1.0, 0.5]) == "ok"
    assert loss_verdict([1.0, 1.1, 1.2, 1.3]) == "loss not decreasing"
    assert loss_verdict([]) == "loss not finite"
