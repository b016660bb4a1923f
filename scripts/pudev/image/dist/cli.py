"""`pudev dist`: the distributed check users run on one node or many (docs/clusters/dist.md)."""

from __future__ import annotations

import json
import sys

from pudev.common.errors import PudevError
from pudev.image.dist.judge import judge
from pudev.image.dist.report import payload, render
from pudev.image.dist.settings import parser, resolve
from pudev.image.verify import exit_code


def _visible_gpus() -> int:
    import torch  # seconds: resolve() asks only once the options are known to be good

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = resolve(args, _visible_gpus)
        from pudev.image.dist.launch import run

        where = f"{settings.nnodes} node(s) x {settings.nproc_per_node} ranks, {settings.backend}"
        print(f"pudev dist: {where}, rendezvous c10d at {settings.endpoint} (id {settings.rdzv_id}, join timeout "
              f"{settings.join_timeout} s), seed {settings.seed}", file=sys.stderr, flush=True)
        result = run(settings)
    except PudevError as error:
        print(f"pudev dist: error: {error}", file=sys.stderr)
        if error.detail:
            print(error.detail, file=sys.stderr)
        return error.exit_code
    checks = judge(result, f"c10d rendezvous at {settings.endpoint}")
    print(json.dumps(payload(result, checks), indent=2) if settings.json else render(result, checks), flush=True)
    return exit_code(checks)
