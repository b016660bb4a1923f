"""Run a build plan: stream BuildKit's progress, name the failing stage, and tag
only on success (BuildKit names the image as its very last step, so a failed or
interrupted build creates or moves no tag; an interrupt that comes after that step
says the tag names the new, complete image). The image a rebuild replaced is removed
after pudev returns, unless something else still names it."""

from __future__ import annotations

import collections
import sys
import time
from typing import TextIO

from pudev.building.buildlog import find_failure
from pudev.building.digests import already_inspected, identify
from pudev.building.input_images import input_images
from pudev.building.plan import BuildPlan, cli_args
from pudev.building.single_build import one_build_at_a_time
from pudev.common.errors import PudevError
from pudev.engine import builds, docker, emulation

LOG_LINES_KEPT = 4000


def run_build(plan: BuildPlan, *, sink: TextIO = sys.stdout) -> str:
    """Build and tag; returns the image id. Raises PudevError with the failing stage."""
    docker.require_daemon()
    platform = plan.variant.platform
    emulation.require_runnable(platform, f"pudev build {plan.variant.name} --platform {platform}")
    kept: collections.deque[str] = collections.deque(maxlen=LOG_LINES_KEPT)
    with one_build_at_a_time(plan.tag):
        # The record names the base's and toolkits' digests, so they must be here (pulled if need be)
        # first, for the platform built. The input images and the image this build replaces are
        # inspected once, together (each call costs the client's start): that answer (or the pull
        # step's) is the inputs' identity.
        references = [needed.reference for needed in input_images(plan.variant)]
        present = docker.inspect_images([*references, plan.tag])
        replaced_info = present.pop(plan.tag)
        replaced = str(replaced_info["Id"]) if replaced_info else None
        inspected = {reference: docker.ensure_local(reference, platform=platform, present=info)
                     for reference, info in present.items()}
        (plan,) = identify([plan], (already_inspected(inspected),))
        spec = plan.spec()  # the plan `pudev plan` prints, each fact it left to the build now filled in
        if spec.pending:
            missing = ", ".join(fact.name for fact in spec.pending)
            raise PudevError(f"the engine has no identity for {missing} of {plan.tag} although it was just "
                             "pulled; rerun the build")
        buildkit_build = builds.BuildKitBuild(cli_args(spec))
        started = time.monotonic()
        try:
            returncode = buildkit_build.run(sink, kept)
        except KeyboardInterrupt:
            raise _interrupted(plan.tag, replaced, docker.image_id(plan.tag)) from None
        if returncode != 0:
            raise _failure(plan, list(kept), returncode)
        # The engine's own id, asked: --iidfile holds it from a 20.10 client, but the config's digest from
        # buildx, which the containerd image store does not list the image by. One way on every engine.
        image = docker.image_id(plan.tag)
        if not image:
            raise PudevError(f"build of {plan.tag} finished but the engine has no such image; rerun the build")
        if replaced and replaced != image:
            docker.drop_if_untagged(replaced, background=True)
    print(f"pudev: built {plan.tag} ({image[7:19]}) in {time.monotonic() - started:.0f} s", file=sink, flush=True)
    return image


def _interrupted(tag: str, replaced: str | None, now: str | None) -> PudevError:
    """What an interrupt left: nothing, unless it came after BuildKit had named the image (its last step,
    so that image is complete)."""
    if now is None or now == replaced:
        return PudevError(f"build of {tag} interrupted: no tag was created or moved", exit_code=130)
    return PudevError(f"build of {tag} interrupted after it had finished: {tag} names the new image ({now[7:19]})",
                      exit_code=130)


def _failure(plan: BuildPlan, lines: list[str], returncode: int) -> PudevError:
    failure = find_failure(lines)
    if failure is None:
        reason = docker.last_line("".join(lines[-20:]))
        message = f"build of {plan.tag} failed (docker exit {returncode}): {reason}"
        return PudevError(message, detail="".join(lines[-15:]))
    detail = "\n".join(f"  | {line}" for line in failure.log_tail) or "  | (the step printed nothing)"
    return PudevError(
        f"build of {plan.tag} {failure.summary()}: {failure.error}",
        detail=f"last lines of its log:\n{detail}",
    )
