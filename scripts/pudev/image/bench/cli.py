"""`pudev bench`: run the ladder and write the table, JSON and chart."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pudev.image.bench.report import render, summarise, write_chart, write_json

SMOKE = {"model": "tiny", "image_size": 32, "images": 128, "batch_size": 16, "warmup": 2, "steps": 4, "classes": 4}
FULL = {"model": "resnet50", "image_size": 224, "images": 4096, "batch_size": 128, "warmup": 10, "steps": 40,
        "classes": 10}


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pudev bench", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny CPU configuration: proves every rung runs")
    parser.add_argument("--model", choices=["resnet50", "vit_b_16", "tiny"],
                        help="default resnet50 (tiny with --smoke)")
    for name, kind in (("batch-size", int), ("steps", int), ("warmup", int), ("images", int), ("image-size", int)):
        parser.add_argument(f"--{name}", type=kind, help="override the configuration's value")
    parser.add_argument("--rungs", default="0-5", help="which rungs to run, e.g. 0-3 or 0,2,5 (0 is always run)")
    parser.add_argument("--compile-mode", default="default", choices=["default", "max-autotune", "reduce-overhead"])
    parser.add_argument("--data-dir", default="/tmp/pudev-bench-data", help="where the JPEG folder is generated")
    parser.add_argument("--out", default="pudev-bench", help="folder for bench.json and bench.png")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser.parse_args(argv)


def _rung_indices(text: str) -> set[int]:
    chosen: set[int] = {0}
    for part in text.split(","):
        low, _, high = part.partition("-")
        chosen |= set(range(int(low), int(high or low) + 1))
    return chosen


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    import torch
    from tqdm import tqdm

    from pudev.image.bench.data import batch_decode_supported, make_jpeg_folder
    from pudev.image.bench.ladder import BenchConfig, LoaderStalledError, is_conv_net, ladder, run_rung

    settings: dict[str, Any] = dict(SMOKE if args.smoke else FULL)
    for key in ("model", "batch_size", "steps", "warmup", "images", "image_size"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    device = "cpu" if args.smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("pudev bench: no GPU visible, and timing claims need one: run it with `--gpus all`, "
              "or `pudev bench --smoke` to check on the CPU that every rung runs", file=sys.stderr)
        return 2
    if settings["model"] == "vit_b_16":
        settings["image_size"] = 224  # the model's fixed input size
    data = make_jpeg_folder(Path(args.data_dir) / f"{settings['images']}x{settings['image_size']}",
                            images=settings["images"], size=settings["image_size"], classes=settings["classes"])
    config = BenchConfig(model=settings["model"], device=device, data=data, classes=settings["classes"],
                         batch_size=settings["batch_size"], warmup=settings["warmup"], steps=settings["steps"],
                         compile_mode=args.compile_mode)
    rungs = [rung for rung in ladder(gpu_decode=batch_decode_supported(device), conv_net=is_conv_net(config.model))
             if rung.index in _rung_indices(args.rungs)]
    gpu_name = torch.cuda.get_device_name() if device == "cuda" else "cpu (smoke: timings mean nothing)"
    print(f"pudev bench: {config.model}, batch {config.batch_size}, {settings['image_size']}px JPEGs, "
          f"{config.warmup}+{config.steps} steps per rung on {gpu_name}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {"config": {**asdict(config), "data": str(config.data),
                                          "image_size": settings["image_size"]},
                               "device": gpu_name, "torch": torch.__version__}
    results: list[dict[str, Any]] = []
    total = len(rungs) * (config.warmup + config.steps)
    with tqdm(total=total, disable=args.no_progress, unit="step", file=sys.stderr) as progress:
        for rung in rungs:
            progress.set_description(f"rung {rung.index} {rung.name}")
            try:
                results.append(run_rung(config, rung, progress).summary(config.batch_size))
            except LoaderStalledError as error:
                print(f"pudev bench: {error}; {out / 'bench.json'} keeps the rungs measured before it",
                      file=sys.stderr)
                return 1
            summary = summarise(results)
            # Written after every rung, so a run cut short (a time limit, Ctrl-C) keeps what it measured.
            write_json(out / "bench.json", {**payload, "complete": len(results) == len(rungs), "rungs": results,
                                            "summary": summary})
    write_chart(out / "bench.png", results, f"{config.model} on {gpu_name}")
    print(render(results, summary))
    print(f"wrote {out / 'bench.json'} and {out / 'bench.png'}")
    return 0 if summary["all_learning"] else 1
