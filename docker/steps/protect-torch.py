"""Build guard and torch protection, in a stage of its own that the final stage copies from.

Fails the build unless the base holds the variant's Python and a CUDA build of
torch with the variant's torch and CUDA versions, then writes the constraints file that keeps every later
pip install (build and run time) from replacing torch, torchvision or torchaudio.
torch's versions come from torch/version.py, which torch's own build writes: importing torch would take
seconds of CPU (10 s measured under a parallel build's load) from the steps that run beside this one,
and the image's test suite imports it anyway. Later steps rely on what this proves: link-toolkits.py
takes the CUDA version checked here.
Usage: python3 protect-torch.py TORCH_VERSION CUDA_VERSION PYTHON_VERSION CONSTRAINTS_FILE
"""

import importlib.util
import re
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import NoReturn

PROTECTED = ("torch", "torchvision", "torchaudio")


def fail(message: str) -> NoReturn:
    print(f"protect-torch: {message}", file=sys.stderr)
    sys.exit(1)


def torch_build() -> tuple[str, str]:
    """torch's version and its CUDA version ("" for a CPU build), as torch/version.py records them."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        fail("the base image has no torch; use a pytorch/pytorch base image")
    text = (Path(next(iter(spec.submodule_search_locations))) / "version.py").read_text()

    def field(name: str) -> str:
        found = re.search(rf"^{name}(?:\s*:\s*[^=]+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
        return found.group(1) if found else ""

    return field("__version__"), field("cuda")


def main() -> None:
    want_torch, want_cuda, want_python, constraints = sys.argv[1:5]
    have_python = f"{sys.version_info.major}.{sys.version_info.minor}"
    if have_python != want_python:
        fail(f"the base's Python is {have_python}, the variant promises {want_python} "
             "(fix field 'python' in docker/variants.toml, or override with --set python=)")
    full_version, cuda = torch_build()
    have_torch = full_version.split("+")[0]
    if not cuda:
        fail(f"torch {full_version} in the base image is not a CUDA build; use a -cudaX.Y- base image")
    if cuda != want_cuda:
        fail(f"the base's torch is built for CUDA {cuda}, the variant promises {want_cuda}")
    if have_torch != want_torch:
        fail(f"the base holds torch {have_torch}, the variant promises {want_torch} (override with --set torch=)")
    lines = []
    for name in PROTECTED:
        try:
            lines.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            continue
    path = Path(constraints)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# The base image's PyTorch family. PIP_CONSTRAINT applies this to every pip\n"
        "# install, so nothing can swap the CUDA build of torch.\n" + "\n".join(lines) + "\n"
    )
    print(f"protect-torch: torch {full_version} (CUDA {cuda}) kept: {', '.join(lines)}")


main()
