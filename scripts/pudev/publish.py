"""`pudev publish VARIANT --registry HOST[/ORG]`: push a tested image once, by
digest, then point every computed tag at that digest.

Nothing is half-published silently: each step is retried with backoff, and a
failure that persists ends with a report of which tags exist remotely and which
do not. Running it again skips what already landed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field

from pudev import engine
from pudev.common.errors import PudevError
from pudev.common.imageref import parse_image_ref
from pudev.registry import RegistryClient, api_host
from pudev.testrun import has_passed

_PUSHED_DIGEST = re.compile(r"digest: (sha256:[0-9a-f]{64})")


@dataclass(frozen=True)
class Target:
    host: str
    repository: str  # path inside the registry, e.g. org/pytorch-universal-dev

    def ref(self, tag: str) -> str:
        return f"{self.host}/{self.repository}:{tag}"


def parse_target(registry: str, image_name: str) -> Target:
    """`ghcr.io/org` + `pudev-local/pytorch-universal-dev` -> ghcr.io, org/pytorch-universal-dev."""
    name = image_name.rsplit("/", 1)[-1]
    candidate = f"{registry.rstrip('/')}/{name}"
    ref = parse_image_ref(candidate)
    if not registry or ref is None or not ref.domain or ref.tag or ref.digest:
        raise PudevError(f"invalid --registry '{registry}': write HOST[:PORT][/ORG], e.g. ghcr.io/my-org or "
                         "127.0.0.1:5000")
    return Target(host=ref.domain, repository=ref.path)


def _retry(action: str, attempts: int, step: object) -> str:
    delay = 1.0
    for attempt in range(1, attempts + 1):
        result: subprocess.CompletedProcess[str] = step()  # type: ignore[operator]
        if result.returncode == 0:
            return result.stdout
        reason = engine.last_line(result.stderr or result.stdout)
        if attempt == attempts:
            raise PudevError(f"{action} failed after {attempts} tries: {reason}")
        print(f"pudev: {action} failed ({reason}); retrying in {delay:.0f} s", file=sys.stderr, flush=True)
        time.sleep(delay)
        delay *= 2
    raise AssertionError("unreachable")


def remote_state(client: RegistryClient, target: Target, tags: list[str]) -> dict[str, str | None]:
    return {tag: client.digest(target.repository, tag) for tag in tags}


def _known_digest(image: str, target: Target) -> str | None:
    """The digest this image got when it was last pushed to the target, if ever."""
    info = engine.inspect_image(image) or {}
    prefix = f"{target.host}/{target.repository}@"
    for repo_digest in info.get("RepoDigests") or []:
        if str(repo_digest).startswith(prefix):
            return str(repo_digest)[len(prefix):]
    return None


def publish(image: str, target: Target, tags: list[str]) -> str:
    """Returns the pushed digest. Raises PudevError with a landed/missing report on failure."""
    image_id = engine.image_id(image)
    if image_id is None:
        raise PudevError(f"no image {image} here: build it first (`pudev build VARIANT`)")
    if not has_passed(image_id):
        raise PudevError(f"{image} ({image_id[7:19]}) has no passing in-image test run: run `pudev test` on it first")
    attempts = int(os.environ.get("PUDEV_PUBLISH_ATTEMPTS", "4"))
    client = RegistryClient(api_host(target.host), retries=attempts - 1)
    client.ping()
    progress = Progress(digest=_known_digest(image, target))
    try:
        _publish_steps(image, target, tags, client, attempts=attempts, progress=progress)
    except PudevError as error:
        raise PudevError(f"publish of {image} to {target.host}/{target.repository} failed: {error}",
                         detail=_report(target, tags, progress)) from None
    assert progress.digest is not None
    return progress.digest


@dataclass
class Progress:
    """What this run knows has landed, for the report when the registry goes away."""

    digest: str | None
    landed: set[str] = field(default_factory=set)


def _publish_steps(image: str, target: Target, tags: list[str], client: RegistryClient, *, attempts: int,
                   progress: Progress) -> None:
    state = remote_state(client, target, tags)
    progress.landed = {tag for tag, found in state.items() if found is not None and found == progress.digest}
    if progress.digest is None or tags[0] not in progress.landed:
        engine.run(["tag", image, target.ref(tags[0])])
        output = _retry(f"push of {target.ref(tags[0])}", attempts,
                        lambda: engine.run(["push", target.ref(tags[0])], check=False, timeout=7200))
        match = _PUSHED_DIGEST.search(output)
        if match is None:
            raise PudevError(f"push of {target.ref(tags[0])} printed no digest; check the engine's log")
        progress.digest = match.group(1)
        progress.landed = {tag for tag, found in state.items() if found == progress.digest} | {tags[0]}
        print(f"pudev: pushed {target.ref(tags[0])} as {progress.digest}", flush=True)
    for tag in tags:
        if tag in progress.landed:
            print(f"pudev: {target.ref(tag)} already at {progress.digest[:19]}", flush=True)
            continue
        client.tag(target.repository, progress.digest, tag)
        progress.landed.add(tag)
        print(f"pudev: tagged {target.ref(tag)}", flush=True)
    final = remote_state(client, target, tags)
    missing = [tag for tag, found in final.items() if found != progress.digest]
    if missing:
        progress.landed -= set(missing)
        raise PudevError(f"{', '.join(missing)} do not point at {progress.digest} after tagging")


def _report(target: Target, tags: list[str], progress: Progress) -> str:
    """Which tags exist remotely and which do not. When the registry is gone, what this run saw."""
    quick = RegistryClient(api_host(target.host), retries=0, timeout=5)
    lines = ["remote state of each tag:"]
    for tag in tags:
        try:
            found = quick.digest(target.repository, tag)
        except PudevError:
            seen = "landed" if tag in progress.landed else "not landed"
            lines.append(f"  {target.ref(tag)}: {seen} (as this run saw it; the registry does not answer now)")
            continue
        if found is None:
            state = "missing"
        elif progress.digest is not None and found == progress.digest:
            state = "landed"
        else:
            state = f"points at another image ({found[:19]})"
        lines.append(f"  {target.ref(tag)}: {state}")
    lines.append("run the same `pudev publish` again to complete it; what landed is not pushed twice")
    return "\n".join(lines)
