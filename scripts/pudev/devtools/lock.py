"""`pudev lock`: hashed requirement locks, resolved by uv for the variant's Python
and platform (not the host's) and against what the base image already ships, so
the image never silently upgrades the base's packages. Variants whose inputs
match (their `lock` name) share one file; their bases must agree.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from pudev.building.requirement_locks import lock_path, tools_lock_path
from pudev.common.errors import PudevError
from pudev.common.lock_file import normalize
from pudev.config.model import Variant
from pudev.engine import docker
from pudev.paths import REPO_ROOT, REQUIREMENTS_DIR

# manylinux_2_28 wheels run on every base here (Ubuntu 22.04: glibc 2.35; 24.04: 2.39; Debian 12: 2.36).
PLATFORM_TAGS = {"linux/amd64": "x86_64-manylinux_2_28", "linux/arm64": "aarch64-manylinux_2_28"}
# torch's family is kept by the image's own constraints file; a base's local build labels (+cu121)
# are not on the index, so they never constrain the resolution.
PROTECTED = {"torch", "torchvision", "torchaudio"}
# The first copy of each name on sys.path: the one Python imports (Debian keeps older copies behind).
LIST_SCRIPT = ("import importlib.metadata as m\nseen = {}\nfor d in m.distributions():\n"
               "    seen.setdefault((d.metadata['Name'] or '').lower(), f\"{d.metadata['Name']}=={d.version}\")\n"
               "print('\\n'.join(v for k, v in seen.items() if k))")


def uv_command() -> str:
    beside_python = Path(sys.executable).with_name("uv")
    found = str(beside_python) if beside_python.exists() else shutil.which("uv")
    if not found:
        raise PudevError("uv is not installed: run `make venv` (it installs requirements/dev.txt)")
    return found


def uv_compile(*args: str) -> list[str]:
    """`uv pip compile ARGS`. uv first looks for an interpreter of --python-version and, finding none,
    downloads one from GitHub; a resolution needs none (it reads metadata for that version), and behind
    a blocked network each try waits on its timeout."""
    return [uv_command(), "pip", "compile", "--no-python-downloads", *args]


def base_packages(image: str) -> list[str]:
    """NAME==VERSION for every distribution the base image ships (torch's family left out)."""
    try:
        docker.ensure_local(image)
    except PudevError:
        raise PudevError(f"base image {image} is not here and could not be pulled, and the lock must respect "
                         "what it ships: build it (`pudev standins` for a stand-in), pull it through "
                         "--pull-mirror, or pass --without-base (the build then keeps the base's own "
                         "versions)") from None
    result = docker.run(["run", "--rm", "--entrypoint", "python3", image, "-c", LIST_SCRIPT], timeout=600)
    pins = set()
    for line in result.stdout.splitlines():
        name, _, version = line.strip().partition("==")
        if name and version and normalize(name) not in PROTECTED:
            pins.add(f"{name}=={version.split('+')[0]}")
    return sorted(pins, key=str.lower)


def compile_lock(source: Path, target: Path, *, python: str, platform: str, constraints: Iterable[str] = (),
                 header: str = "") -> None:
    """uv pip compile with hashes for the given Python and platform, under `constraints`."""
    with tempfile.TemporaryDirectory() as folder:
        constraint_file = Path(folder) / "base.txt"
        constraint_file.write_text("".join(f"{pin}\n" for pin in constraints))
        output = Path(folder) / "lock.txt"
        if target.exists():
            # uv keeps the pins already in its output file: adding a package adds it (and what it
            # needs) without moving every other pin to today's release.
            shutil.copyfile(target, output)
        command = uv_compile(
            str(source), "--generate-hashes", "--quiet", "--python-version", python,
            "--python-platform", PLATFORM_TAGS[platform],
            "--custom-compile-command", "make lock",
            "--constraint", str(constraint_file),
            "--output-file", str(output),
        )
        result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise PudevError(f"locking {target.name} failed: {last}")
        # uv names the constraints file in its annotations: a temporary path, new on every run.
        target.write_text(header + output.read_text().replace(str(constraint_file), "base-image-packages.txt"))


def _group(variants: Iterable[Variant]) -> dict[str, list[Variant]]:
    groups: dict[str, list[Variant]] = {}
    for variant in variants:
        groups.setdefault(variant.lock, []).append(variant)
    for name, members in groups.items():
        shapes = {(v.python, v.platform) for v in members}
        if len(shapes) > 1:
            raise PudevError(f"variants {', '.join(v.name for v in members)} share lock '{name}' but differ in "
                             "Python or platform; give them their own `lock` names in docker/variants.toml")
    return groups


def write_locks(variants: list[Variant], *, without_base: bool = False) -> list[Path]:
    """One lock per lock name, resolved against its variants' bases, plus the build-only tools."""
    written = []
    for name, members in _group(variants).items():
        bases = sorted({v.base_image for v in members})
        constraints: set[str] = set()
        if not without_base:
            for base in bases:
                constraints |= set(base_packages(base))
        said = "resolved without the base images' packages (--without-base)" if without_base else \
            "resolved against the packages of " + ", ".join(bases)
        header = f"# pudev lock '{name}' for {', '.join(v.name for v in members)}: {said}\n"
        target = lock_path(members[0])
        compile_lock(REQUIREMENTS_DIR / "image.in", target, python=members[0].python, platform=members[0].platform,
                     constraints=sorted(constraints), header=header)
        written.append(target)
    compile_lock(REQUIREMENTS_DIR / "build-tools.in", tools_lock_path(), python=variants[0].python,
                 platform=variants[0].platform)
    return [*written, tools_lock_path()]
