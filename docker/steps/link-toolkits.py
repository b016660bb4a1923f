"""Point /usr/local/cuda at the default toolkit, and give the toolkit that shares
torch's CUDA major version linker names (libcublas.so, ...) for the math
libraries and NVRTC that torch ships, which prune-toolkit.sh removed from the toolkit itself.
torch's CUDA version is the variant's, which the torch guard (protect-torch.py) proved before this runs.
Usage: python link-toolkits.py TORCH_CUDA DEFAULT_TOOLKIT TOOLKIT...
"""

import sys
import sysconfig
from pathlib import Path

MATH_LIBRARIES = ("cublas", "cublasLt", "cufft", "cufftw", "curand", "cusolver", "cusparse", "nvJitLink", "nvrtc")


def torch_library_dirs() -> list[Path]:
    """pip builds keep CUDA libraries in site-packages/nvidia/*/lib; conda builds in prefix/lib."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    return [*sorted(purelib.glob("nvidia/*/lib")), Path(sys.prefix) / "lib"]


def main() -> None:
    cuda, default, *versions = sys.argv[1:]
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
