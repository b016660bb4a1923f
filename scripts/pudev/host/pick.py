"""`pudev pick`: which tag to take on this host, which others run, why the rest do not, and what would break
a first `docker run --gpus`. Printed as lines and a table, or as JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TextIO

from pudev.common.errors import PudevError
from pudev.common.platforms import native_platform
from pudev.common.table import render_table
from pudev.config.model import Matrix
from pudev.host.first_run import Finding, findings
from pudev.host.fit import Choice, Fit, choose, judge
from pudev.host.gpus import HostGpus, read_gpus


@dataclass(frozen=True)
class Answer:
    platform: str
    host: HostGpus
    fits: list[Fit]
    choice: Choice
    findings: list[Finding]


def answer(matrix: Matrix, *, platform: str | None = None, host: HostGpus | None = None,
           checks: list[Finding] | None = None) -> Answer:
    """Read what is not given (this host's platform, GPUs, engine), then decide from the matrix."""
    platform = native_platform() if platform is None else platform
    host = read_gpus() if host is None else host
    fits = judge(matrix, platform, host)
    return Answer(platform, host, fits, choose(matrix, fits, host),
                  findings(gpus=bool(host.gpus)) if checks is None else checks)


def _here(fit: Fit, gpus: bool) -> str:
    if fit.runs and not gpus:
        return "CPU only"
    if fit.full:
        return "yes"
    return "yes, not fully" if fit.runs else "no"


def render(found: Answer) -> str:
    host = found.host
    lines = [f"this host: {found.platform or 'an unknown platform'}, "
             + (f"NVIDIA driver {host.driver} (read through {host.source})" if host.driver else host.problem)]
    lines += [f"  GPU {gpu.index}: {gpu.describe()}" for gpu in host.gpus]
    if not host.gpus and host.driver:
        lines.append("  no GPU")
    lines += [f"  {note}" for note in host.notes]
    if host.fix:
        lines.append(f"  fix: {host.fix}")
    rows = [[fit.tag + (" (latest)" if fit.variant.latest else ""), fit.variant.torch, fit.variant.cuda,
             _here(fit, bool(host.gpus)), "; ".join(fit.why)] for fit in found.fits]
    lines += ["", render_table(("tag", "torch", "CUDA", "runs here", "why not (or not fully)"), rows), ""]
    lines.append(f"take {found.choice.tag}: {found.choice.why}" if found.choice.tag else found.choice.why)
    lines += ["", "before the first `docker run" + (" --gpus all`:" if host.gpus else "`:")]
    width = max((len(item.check) for item in found.findings), default=0)
    lines += [f"  {item.check.ljust(width)}  {item.status.ljust(4)}  {item.detail}"
              for item in found.findings]
    return "\n".join(lines)


def as_json(found: Answer) -> str:
    document: dict[str, Any] = {
        "platform": found.platform,
        "driver": found.host.driver, "source": found.host.source, "problem": found.host.problem,
        "fix": found.host.fix,
        "gpus": [{"index": gpu.index, "name": gpu.name, "capability": gpu.capability} for gpu in found.host.gpus],
        "tags": [{"tag": fit.tag, "torch": fit.variant.torch, "cuda": fit.variant.cuda, "latest": fit.variant.latest,
                  "runs": fit.runs, "full_support": fit.full, "why": list(fit.why)} for fit in found.fits],
        "take": found.choice.tag or None, "why": found.choice.why,
        "checks": [{"check": item.check, "status": item.status, "message": item.message, "fix": item.fix}
                   for item in found.findings],
    }
    return json.dumps(document, indent=2, ensure_ascii=False)


def run_pick(matrix: Matrix, *, output: str, out: TextIO) -> int:
    """Print the answer (`text`, `json`, or the `tag` alone); no tag that runs here is a failure, after the
    table that says why (with `tag`, the one line alone: a script reads the tag from stdout)."""
    found = answer(matrix)
    if output != "tag":
        print(as_json(found) if output == "json" else render(found), file=out)
    elif found.choice.tag:
        print(found.choice.tag, file=out)
    if not found.choice.tag:
        raise PudevError(f"no tag of {matrix.path.name} runs on this host: {found.choice.why}")
    return 0
