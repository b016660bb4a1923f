"""`pudev` inside the image: selftest, record, mirror (and the tools added later)."""

from __future__ import annotations

import argparse
import importlib
import sys

from pudev.common.errors import PudevError

TOOLS = {"verify": "verify", "gpumon": "gpumon", "bench": "bench.cli", "dist": "dist.cli", "wheel": "wheels.build"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "mirror":
        from pudev.mirror.__main__ import main as mirror_main

        return mirror_main(argv[1:])
    # Tools with their own options: verify, gpumon, bench, dist, wheel.
    if argv and argv[0] in TOOLS:
        module = importlib.import_module(f"pudev.image.{TOOLS[argv[0]]}")
        return int(module.main(argv[1:]))
    parser = argparse.ArgumentParser(prog="pudev", description="PyTorch Universal Dev tools (inside the image).")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    selftest = commands.add_parser("selftest", help="run the image's own test suite")
    half = selftest.add_mutually_exclusive_group()
    half.add_argument("--cpu-only", action="store_true", help="leave out the GPU checks (the CPU half)")
    half.add_argument("--gpu-only", action="store_true", help="only the GPU checks, which then must run")
    half.add_argument("--platform-only", action="store_true",
                      help="only the CPU checks that prove the image on its platform (for emulated runs)")
    selftest.add_argument("--junit", default="", metavar="PATH", help="also write a JUnit XML report")
    selftest.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed on to pytest (after --)")
    commands.add_parser("record", help="print what this image was built to contain")
    inventory = commands.add_parser("inventory", help="print what is really installed, as JSON (for `pudev manifest`)")
    inventory.add_argument("--files", action="store_true", help="also a census of the image's files (a whole walk)")
    commands.add_parser("mirror", help="switch or show package mirrors (pudev mirror --help)")
    commands.add_parser("verify", help="check GPU, driver, torch, toolkit, shm ... (pudev verify --help)")
    commands.add_parser("gpumon", help="live GPU monitor through NVML (pudev gpumon --help)")
    commands.add_parser("bench", help="the training-speed optimisation ladder (pudev bench --help)")
    commands.add_parser("dist", help="torchrun over processes and nodes: collectives, DDP, bandwidth")
    commands.add_parser("wheel", help="build extension wheels for this image into the wheelhouse (pudev wheel --help)")
    args = parser.parse_args(argv)
    try:
        if args.command == "selftest":
            from pudev.image import selftest as runner

            extra = [arg for arg in args.pytest_args if arg != "--"]
            return runner.run(extra, cpu_only=args.cpu_only, gpu_only=args.gpu_only,
                              platform_only=args.platform_only, junit=args.junit)
        if args.command == "record":
            from pudev.image.record import main as record_main

            return record_main(["show"])
        if args.command == "inventory":
            from pudev.image.inventory import main as inventory_main

            return inventory_main(["--files"] if args.files else [])
    except PudevError as error:
        print(f"pudev: error: {error}", file=sys.stderr)
        return error.exit_code
    return 0
