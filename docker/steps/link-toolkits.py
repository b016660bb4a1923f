"""Point /usr/local/cuda at the default toolkit, and give the toolkit that shares
torch's CUDA major version linker names (libcublas.so, ...) for the math
libraries and NVRTC that torch ships, which prune-toolkit.sh removed from the toolkit itself.
Usage: python link-toolkits.py DEFAULT_TOOLKIT TOOLKIT...
"""

import importlib.util
import re
import sys
import sysconfig
from pathlib import Path


def torch_cuda() -> str:
    """torch's CUDA version, read from torch/version.py: importing torch takes seconds (10 s measured under
    a parallel build's load), and this step is on the build's critical path."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("link-toolkits: the base has no torch")
    text = (Path(next(iter(spec.submodule_search_locations))) / "version.py").read_text()
    found = re.search(r"^cuda(?:\s*:\s*[^=]+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return found.group(1) if found else ""


MATH_LIBRARIES = ("cublas", "cublasLt", "cufft", "cufftw", "curand", "cusolver", "cusparse", "nvJitLink", "nvrtc")


def torch_library_dirs() -> list[Path]:
    """pip builds keep CUDA libraries in site-packages/nvidia/*/lib; conda builds in prefix/lib."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    return [*sorted(purelib.glob("nvidia/*/lib")), Path(sys.prefix) / "lib"]


def main() -> None:
    default, *versions = sys.argv[1:]
    cuda = torch_cuda()
    torch_major = cuda.split(".")[0]
    if default.split(".")[0] != torch_major:
        sys.exit(f"link-toolkits: default toolkit {default} does not match torch's CUDA {cuda or '(none)'}")
    current = Path("/usr/local/cuda")
    if current.is_symlink() or not current.exists():
        current.unlink(missing_ok=True)
        current.symlink_to(f"cuda-{default}")
    for version in versions:
        if version.split(".")[0] != torch_major:
            continue
        lib64 = Path(f"/usr/local/cuda-{version}/lib64")
        for name in MATH_LIBRARIES:
            link = lib64 / f"lib{name}.so"
            if link.exists() or link.is_symlink():
                continue
            for directory in torch_library_dirs():
                found = sorted(directory.glob(f"lib{name}.so.*"))
                if found:
                    link.symlink_to(found[0])
                    print(f"link-toolkits: {link} -> {found[0]}")
                    break


main()
