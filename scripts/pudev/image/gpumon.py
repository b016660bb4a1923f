"""`pudev gpumon`: a live NVML monitor. Per GPU: utilisation, memory, temperature,
power and the processes using it; once, or refreshed at an interval; --json."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict

from pudev.common.table import render_table
from pudev.image.nvml import GpuSnapshot, NvmlSource, NvmlUnavailableError, PynvmlSource

GIB = 1024**3


def render(gpus: list[GpuSnapshot], driver: str) -> str:
    rows = []
    for gpu in gpus:
        processes = ", ".join(f"{p.name}({p.pid}) {p.memory_used / GIB:.1f}G" for p in gpu.processes) or "-"
        rows.append([gpu.index, gpu.name, f"{gpu.utilization}%",
                     f"{gpu.memory_used / GIB:.1f}/{gpu.memory_total / GIB:.1f} GiB", f"{gpu.temperature} C",
                     f"{gpu.power_draw:.0f}/{gpu.power_limit:.0f} W", processes])
    header = f"driver {driver}, {len(gpus)} GPU(s), {time.strftime('%H:%M:%S')}"
    table = render_table(["gpu", "name", "util", "memory", "temp", "power", "processes"], rows)
    return f"{header}\n{table}"


def as_json(gpus: list[GpuSnapshot], driver: str) -> str:
    return json.dumps({"driver": driver, "time": time.time(), "gpus": [asdict(gpu) for gpu in gpus]})


def run(source_factory: Callable[[], NvmlSource], *, interval: float, count: int, json_output: bool) -> int:
    try:
        source = source_factory()
    except NvmlUnavailableError as error:
        print(f"pudev gpumon: {error}", file=sys.stderr)
        return 1
    try:
        shown = 0
        while True:
            gpus, driver = source.snapshot(), source.driver_version()
            if json_output:
                print(as_json(gpus, driver), flush=True)
            else:
                if interval and sys.stdout.isatty():
                    print("\033[H\033[2J", end="")  # redraw in place on a terminal
                print(render(gpus, driver), flush=True)
            shown += 1
            if not interval or (count and shown >= count):
                return 0
            time.sleep(interval)
    except KeyboardInterrupt:
        return 0
    finally:
        source.close()


def main(argv: list[str] | None = None, source_factory: Callable[[], NvmlSource] = PynvmlSource) -> int:
    parser = argparse.ArgumentParser(prog="pudev gpumon", description=__doc__)
    parser.add_argument("--interval", "-i", type=float, default=0.0, metavar="SECONDS",
                        help="refresh every SECONDS (default: print once)")
    parser.add_argument("--count", "-n", type=int, default=0, help="stop after N refreshes (default: until Ctrl-C)")
    parser.add_argument("--json", action="store_true", help="one JSON object per refresh")
    args = parser.parse_args(argv)
    return run(source_factory, interval=args.interval, count=args.count, json_output=args.json)
