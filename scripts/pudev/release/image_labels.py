"""What a built image says about its own release, in the labels pudev gives it at build time
(building/labels.py): its variant, the repository it publishes under, the test scopes it must
pass before promotion and whether it is tagged `latest`. Push, test and promote read these
from the image itself, never from the checkout's variant file, which may have changed since.
The label names come from the fields' one contract (pudev.common.variant)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pudev.common.errors import PudevError
from pudev.common.halves import SUITE_SCOPES
from pudev.common.variant import label_key

VARIANT_LABEL = label_key("name")
IMAGE_LABEL = label_key("image")
REQUIRED_TESTS_LABEL = label_key("required_tests")
LATEST_LABEL = label_key("latest")
PLATFORMS_LABEL = label_key("platforms")
RELEASE_LABELS = (VARIANT_LABEL, IMAGE_LABEL, REQUIRED_TESTS_LABEL, LATEST_LABEL, PLATFORMS_LABEL)


@dataclass(frozen=True)
class ReleaseLabels:
    variant: str
    image: str  # the image name it publishes under (its last part names the repository)
    required_tests: tuple[str, ...]  # the scopes a candidate must pass (cpu, gpu, platform)
    latest: bool  # the matrix's default variant when it was built: promotion also tags it `latest`
    platforms: tuple[str, ...]  # every platform its variant is built for: one tag spans them all

    @property
    def repository_name(self) -> str:
        return self.image.rsplit("/", 1)[-1]


def release_labels(labels: Mapping[str, str], *, image: str) -> ReleaseLabels:
    """The release labels of `image` (named in the errors); an image built before pudev gave them is refused."""
    missing = [name for name in RELEASE_LABELS if not labels.get(name)]
    if missing:
        rebuild = f"pudev build {labels[VARIANT_LABEL]}" if labels.get(VARIANT_LABEL) else "pudev build VARIANT"
        raise PudevError(f"{image} carries no {' or '.join(missing)} label: it was built by an older pudev or not by "
                         f"pudev; rebuild it with this pudev (`{rebuild}`), then push and test that build")
    required = tuple(scope.strip() for scope in labels[REQUIRED_TESTS_LABEL].split(",") if scope.strip())
    unknown = [scope for scope in required if scope not in SUITE_SCOPES]
    if unknown or not required:
        raise PudevError(f"{image}: its label {REQUIRED_TESTS_LABEL}={labels[REQUIRED_TESTS_LABEL]} names no test "
                         f"scope pudev knows ({', '.join(SUITE_SCOPES)}); rebuild it with this pudev")
    latest = labels[LATEST_LABEL]
    if latest not in ("true", "false"):
        raise PudevError(f"{image}: its label {LATEST_LABEL}={latest} is neither true nor false; rebuild it with "
                         "this pudev")
    platforms = tuple(platform.strip() for platform in labels[PLATFORMS_LABEL].split(",") if platform.strip())
    return ReleaseLabels(variant=labels[VARIANT_LABEL], image=labels[IMAGE_LABEL], required_tests=required,
                         latest=latest == "true", platforms=platforms)
