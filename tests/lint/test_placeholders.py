"""One spelling for the registry path a reader must fill in: `OWNER`, in capitals, as in
`ghcr.io/OWNER/pytorch-universal-dev:cu126` (pyxis and enroot write it `ghcr.io#OWNER/...`; an ACR copy
`registry.cn-hangzhou.aliyuncs.com/OWNER/...`). Capitals on purpose: pasted as written, docker refuses the
reference at once (`invalid reference format: repository name must be lowercase`, which troubleshooting
keys), where a lower-case stand-in such as `my-org` looks real and fails later, as someone else's image or
an `unauthorized` pull. This project publishes no image itself, so every registry path to its image is a
placeholder: the docs, the READMEs, examples/, the Compose file and the Dev Containers file use this one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pudev.paths import REPO_ROOT

PLACEHOLDER = "OWNER"
IMAGE = "pytorch-universal-dev"
FILES = sorted({*REPO_ROOT.glob("README*.md"), *(REPO_ROOT / "docs").rglob("*.md"),
                *(path for path in (REPO_ROOT / "examples").rglob("*") if path.is_file()),
                REPO_ROOT / "docker-compose.yml",
                *(path for path in (REPO_ROOT / ".devcontainer").rglob("*") if path.is_file())})
# This project's image under a registry path: the segment before the image's name is the account
# (ghcr.io), the namespace (ACR), or a whole registry (`REGISTRY/...`). `https://ghcr.io/v2/OWNER/...` too.
IMAGE_PATH = re.compile(r"(?P<account>[^/#\s`'\"(){}=]+)[/#]" + IMAGE + r"(?![\w])", re.IGNORECASE)
# A stand-in word for the account after a registry host, in any case, wherever it appears (a `--registry`
# value, a prose mention): the old spellings and their kin.
STAND_IN_WORDS = (r"<?(?:owner|my[-_]?org|your[-_]?(?:org|name|user|account|namespace)|org|namespace"
                  r"|user(?:name)?|account)>?")
STAND_IN = re.compile(r"(?:ghcr\.io|docker\.io|quay\.io|aliyuncs\.com)[/#](?P<account>" + STAND_IN_WORDS
                      + r")(?=[/\s`'\"):.,]|$)", re.IGNORECASE)
# A stand-in word alone, as in "replace `ghcr.io/my-org/...`" or "the repository `NAMESPACE/...`".
LONE_WORD = re.compile(r"(?<![\w-])(?P<account>my-org|NAMESPACE)(?=/)", re.IGNORECASE)


def wrong_placeholders(text: str) -> list[str]:
    """Each registry path in `text` that spells the reader's account otherwise than `OWNER`."""
    found = [match.group(0) for pattern in (IMAGE_PATH, STAND_IN, LONE_WORD) for match in pattern.finditer(text)
             if match.group("account") != PLACEHOLDER]
    return sorted(set(found))


def test_the_files_are_found() -> None:
    names = {path.relative_to(REPO_ROOT).as_posix() for path in FILES}
    assert {"README.md", "docs/quickstart.md", "docker-compose.yml", ".devcontainer/devcontainer.json",
            "examples/slurm/pudev-dist.sbatch"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.relative_to(REPO_ROOT).as_posix())
def test_one_placeholder_spelling(path: Path) -> None:
    wrong = wrong_placeholders(path.read_text())
    assert not wrong, (f"{path.relative_to(REPO_ROOT)}: write the registry path as ghcr.io/{PLACEHOLDER}/{IMAGE} "
                       f"(pyxis: ghcr.io#{PLACEHOLDER}/..., ACR: registry.REGION.aliyuncs.com/{PLACEHOLDER}/...), "
                       f"not: {wrong}")


@pytest.mark.parametrize("planted", [
    f"docker run ghcr.io/my-org/{IMAGE}:cu126",  # the five spellings this test replaced
    f"pudev test ghcr.io/my-org/{IMAGE}-candidates@sha256:D",
    f"srun --container-image=ghcr.io#my-org/{IMAGE}:cu126",
    f"docker pull registry.cn-hangzhou.aliyuncs.com/NAMESPACE/{IMAGE}:cu126",
    f"podman pull REGISTRY/{IMAGE}:cu126",
    f"docker pull ghcr.io/owner/{IMAGE}:cu126",  # case variants: accepted by docker as a real path
    f"docker pull ghcr.io/Owner/{IMAGE}:cu126",
    f"enroot import docker://ghcr.io#owner/{IMAGE}:cu126",
    f"image: ghcr.io/your-org/{IMAGE}:cu126",
    f"docker pull ghcr.io/<owner>/{IMAGE}:cu126",
    f"docker pull docker.io/someone/{IMAGE}:cu126",
    "pudev push cu132 --registry ghcr.io/my-org",
    "pudev push cu132 --registry ghcr.io/owner",
    "Replace `ghcr.io/my-org/...` with your image",
    "the repository `NAMESPACE/pytorch-universal-dev`",
])
def test_another_spelling_fails(planted: str, tmp_path: Path) -> None:
    """The check can fail: each old spelling, and a case variant of the right one, is found in a page."""
    page = tmp_path / "page.md"
    page.write_text(f"# A page\n\n```sh\n{planted}\n```\n")
    assert wrong_placeholders(page.read_text()), planted


@pytest.mark.parametrize("right", [
    f"docker pull ghcr.io/{PLACEHOLDER}/{IMAGE}:cu126",
    f"srun --container-image=ghcr.io#{PLACEHOLDER}/{IMAGE}:cu126",
    f"skopeo copy docker://{IMAGE}:cu126 docker://registry.cn-hangzhou.aliyuncs.com/{PLACEHOLDER}/{IMAGE}:cu126",
    f'Head "https://ghcr.io/v2/{PLACEHOLDER}/{IMAGE}/manifests/cu126": unauthorized',
    f"docker run --rm {IMAGE}:cu126 pudev verify",
    "image: ${PUDEV_IMAGE:-" + IMAGE + ":cu132}",
    f"cosign verify ghcr.io/{PLACEHOLDER}/{IMAGE}@sha256:DIGEST",
])
def test_the_placeholder_passes(right: str) -> None:
    assert wrong_placeholders(right) == []
