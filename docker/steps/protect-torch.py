"""Build guard and torch protection, run first in the final stage.

Fails the build unless the base holds the variant's Python and a CUDA build of
torch with the variant's torch and CUDA versions, then writes the constraints file that keeps every later
pip install (build and run time) from replacing torch, torchvision or torchaudio.
Usage: python3 protect-torch.py TORCH_VERSION CUDA_VERSION PYTHON_VERSION CONSTRAINTS_FILE
"""

import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import NoReturn

PROTECTED = ("torch", "torchvision", "torchaudio")


def fail(message: str) -> NoReturn:
    print(f"protect-torch: {message}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    want_torch, want_cuda, want_python, constraints = sys.argv[1:5]
    have_python = f"{sys.version_info.major}.{sys.version_info.minor}"
    if have_python != want_python:
        fail(f"the base's Python is {have_python}, the variant promises {want_python} "
             "(fix field 'python' in docker/variants.toml, or override with --set python=)")
    try:
        import torch
    except ImportError as error:
        fail(f"the base image has no importable torch ({error}); use a pytorch/pytorch base image")
    have_torch = torch.__version__.split("+")[0]
    if torch.version.cuda is None:
        fail(f"torch {torch.__version__} in the base image is not a CUDA build; use a -cudaX.Y- base image")
    if torch.version.cuda != want_cuda:
        fail(f"the base's torch is built for CUDA {torch.version.cuda}, the variant promises {want_cuda}")
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
    print(f"protect-torch: torch {torch.__version__} (CUDA {torch.version.cuda}) kept: {', '.join(lines)}")


main()
