"""`pudev` on the host: plan, build, test and publish the image variants.

parser (the options) -> request (parsed once, typed) -> commands (one handler each)."""

from __future__ import annotations

import sys

from pudev.common.errors import PudevError


def main(argv: list[str] | None = None) -> int:
    from pudev.cli.commands import HANDLERS
    from pudev.cli.parser import build_parser
    from pudev.cli.request import request_from
    from pudev.common.environment import check_all

    parser = build_parser(HANDLERS, __doc__.splitlines()[0] if __doc__ else "pudev")
    argv = sys.argv[1:] if argv is None else list(argv)
    # Everything after the first `--` belongs to pytest (pudev test VARIANT -- -k name).
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, or a usage error argparse has printed as one line
        return int(stop.code or 0)
    if extra and args.command != "test":
        print(f"pudev: error: arguments after --: only `pudev test` passes them on (to pytest); remove "
              f"`-- {' '.join(extra)}`", file=sys.stderr)
        return 2
    try:
        check_all()  # a bad PUDEV_* value fails here, before any work
        request = request_from(args, extra)
        return int(args.handler(request))
    except PudevError as error:
        print(f"pudev: error: {error}", file=sys.stderr)
        if error.detail:
            print(error.detail.rstrip("\n"), file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("pudev: interrupted", file=sys.stderr)
        return 130
