"""The proof's shards: what one `make` target proves on one machine, each within its own disk, as
docker-stacks runs one CI job per image. `make test-all` runs them in SHARDS' order.

  newest  the profile behind `latest` on this host's platform, with the lint gates, the unit tests and every
          e2e test that proves the pipeline rather than one line's content (registry and publishing, any uid,
          clusters, faults, the blocked network, JupyterLab, Compose and the devcontainer, bake, release day)
  2024    every other profile on this host's platform (today `local`, the 2024 line: two toolkits, a conda
          base): only the tests that take a build as their parameter
  arm64   every build for linux/arm64 (here under binfmt emulation): its platform scope and the one tag that
          spans both platforms
  podman  rootless podman running the newest image: its own copy of the image (about 15 GB with its keep-id
          twin) cannot sit beside the newest shard's registry and builds

A test belongs to `newest` unless it is marked `shard(NAME)`: a module's pytestmark, or a build parameter
made with `by_shard`. Which builds a shard makes is derived from the stand-in file and the matrix, so a
release-day move changes no name here.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

NEWEST, LINE_2024, ARM64, PODMAN = "newest", "2024", "arm64", "podman"
AMD64 = "linux/amd64"  # the lines' own shards are of this platform; every other platform has a shard of its own
# make test-all's order: the shards that run the newest build first, so that it is built once; the 2024 line,
# which needs none of it, last (a fresh run of 2026-12-07 in the order newest, 2024, arm64 rebuilt the newest
# stand-ins in the arm64 shard and passed 53 GB above the start).
SHARDS = (NEWEST, PODMAN, ARM64, LINE_2024)


def shard_of(build: str) -> str:
    """The shard that makes a stand-in build."""
    from e2e_support import profile_variant  # the names above are read before the e2e suite loads

    from pudev.config.loader import load_matrix, variants_input

    variant = profile_variant(build)
    if variant.platform != AMD64:  # by the build's platform, emulated here or native on an arm64 runner
        return variant.platform.split("/", 1)[1]  # the architecture: arm64
    # A profile's own builds never carry `latest`; the variant it stands in for may.
    return NEWEST if variant.name == load_matrix(variants_input()).default_variant else LINE_2024


def builds_of(shard: str) -> list[str]:
    """The stand-in builds a shard makes (podman makes none: it runs the newest one)."""
    from e2e_support import standin_builds

    return [build for build in standin_builds() if shard_of(build) == shard]


def builds_used(shard: str) -> list[str]:
    """The builds a shard's tests run: its own, the newest for podman, and for another platform's shard this
    host's build of the same profile too (the one tag spans both). Before it starts, the rest is released."""
    from e2e_support import split_build

    if shard == PODMAN:
        return builds_of(NEWEST)
    own = builds_of(shard)
    return own + [split_build(build)[0] for build in own if split_build(build)[1]]


def newest_profile() -> str:
    """The profile behind `latest`, the image every cross-cutting test runs."""
    (build,) = builds_of(NEWEST)
    return build


def by_shard(builds: Iterable[str]) -> list[object]:
    """Builds as test parameters, each marked with the shard that makes it (`--shard` keeps its own)."""
    return [pytest.param(build, marks=pytest.mark.shard(shard_of(build)), id=build) for build in builds]


if __name__ == "__main__":  # `python tests/e2e/shards.py SHARD`: the builds it makes, one a line (make build-local)
    import sys

    if len(sys.argv) != 2 or sys.argv[1] not in SHARDS:
        sys.exit(f"usage: python tests/e2e/shards.py SHARD (one of {', '.join(SHARDS)})")
    print("\n".join(builds_of(sys.argv[1])))
