"""GPU architectures by compute capability: their names, which of torch's compiled targets
run on a GPU, and which toolkits' nvcc compile for it. Pure, so `pudev verify` can judge
recorded facts.

CUDA's rules: SASS for sm_XY runs on sm_XZ with Z >= Y (same major); PTX for compute_XY is
JIT-compiled by the driver for any capability at or above X.Y. An 'a' target (sm_90a,
sm_100a) runs on its own capability only; an 'f' target (sm_100f) on its family: the same
major, an equal or higher minor."""

from __future__ import annotations

from dataclasses import dataclass

# The major's name, with the minors that differ (Turing is 7.5, Ada is 8.9).
_NAMES = {3: "Kepler", 5: "Maxwell", 6: "Pascal", 7: "Volta", 8: "Ampere", 9: "Hopper", 10: "Blackwell",
          11: "Blackwell", 12: "Blackwell"}
_MINOR_NAMES = {(7, 5): "Turing", (8, 9): "Ada Lovelace"}


@dataclass(frozen=True)
class Target:
    """One entry of torch.cuda.get_arch_list(): sm_90 (SASS), compute_90 (PTX), sm_100a."""

    entry: str
    ptx: bool
    major: int
    minor: int
    suffix: str  # "", "a" (this capability only) or "f" (its family)


@dataclass(frozen=True)
class Coverage:
    """The target torch runs on a GPU, and how: its own SASS, a compatible SASS, or PTX."""

    entry: str
    how: str  # exact, compatible, ptx
    capability: str  # the target's: "12.0" for sm_120


# GPUs behind ARM CPUs, by compute capability: what an arm64 image serves.
ARM_GPUS = {"9.0": "GH200", "10.0": "GB200", "10.3": "GB300", "11.0": "Jetson Thor", "12.1": "DGX Spark"}
# The cards people own on x86 hosts, by compute capability (NVIDIA's "CUDA GPU compute capability" list):
# what the tag tables name, so nobody has to know that an RTX 4090 is Ada, sm_89.
AMD64_GPUS = {"5.2": ("GeForce GTX 900",), "6.0": ("P100",), "6.1": ("GeForce GTX 10",), "7.0": ("V100",),
              "7.5": ("GeForce RTX 20", "T4"), "8.0": ("A100", "A30"), "8.6": ("GeForce RTX 30", "A10", "A40"),
              "8.9": ("GeForce RTX 40", "L4", "L40S"), "9.0": ("H100", "H200"), "10.0": ("B200",), "10.3": ("B300",),
              "12.0": ("GeForce RTX 50", "RTX PRO 6000 Blackwell")}


def torch_oldest(cuda: str, platform: str) -> str:
    """The oldest compute capability torch's own CUDA builds carry kernels for (PyTorch's release notes,
    "supported architectures"): CUDA 13 builds dropped Maxwell, Pascal and Volta, and the aarch64 (sbsa)
    builds start at Ampere."""
    if platform == "linux/arm64":
        return "8.0"
    return "7.5" if int(cuda.split(".")[0]) >= 13 else "5.0"


def capability_of(capability: str) -> tuple[int, int]:
    major, minor = capability.split(".")
    return int(major), int(minor)


def sm_name(capability: str) -> str:
    """"sm_121" for "12.1"."""
    major, minor = capability_of(capability)
    return f"sm_{major}{minor}"


def arch_name(capability: str) -> str:
    """"Hopper" for "9.0"; "unknown" for a capability newer than this table."""
    major, minor = capability_of(capability)
    return _MINOR_NAMES.get((major, minor)) or _NAMES.get(major, "unknown")


def parse_target(entry: str) -> Target | None:
    """None for what is no sm_/compute_ target (a torch build may list others)."""
    kind, _, digits = entry.partition("_")
    suffix = digits[-1] if digits[-1:] in ("a", "f") else ""
    digits = digits.removesuffix(suffix)
    if kind not in ("sm", "compute") or not digits.isdigit() or len(digits) < 2:
        return None
    return Target(entry, kind == "compute", int(digits[:-1]), int(digits[-1]), suffix)


def _runs(target: Target, major: int, minor: int) -> bool:
    if target.suffix == "a":
        return (target.major, target.minor) == (major, minor)
    if target.ptx and not target.suffix:
        return (target.major, target.minor) <= (major, minor)
    return target.major == major and target.minor <= minor  # SASS, or an 'f' family target


def coverage(capability: str, arch_list: list[str]) -> Coverage | None:
    """The best of torch's targets for a GPU: its own SASS, else the newest compatible SASS,
    else the newest PTX; None when nothing runs (no kernel image is available)."""
    major, minor = capability_of(capability)
    targets = [t for t in map(parse_target, arch_list) if t is not None and _runs(t, major, minor)]
    sass = sorted((t for t in targets if not t.ptx), key=lambda t: (t.minor, t.suffix == "a"), reverse=True)
    ptx = sorted((t for t in targets if t.ptx), key=lambda t: (t.major, t.minor), reverse=True)
    if sass:
        best = sass[0]
        return Coverage(best.entry, "exact" if best.minor == minor else "compatible", f"{best.major}.{best.minor}")
    return Coverage(ptx[0].entry, "ptx", f"{ptx[0].major}.{ptx[0].minor}") if ptx else None


def compiling_toolkits(capability: str, ranges: list[tuple[str, str, str]]) -> list[str]:
    """The toolkits whose nvcc compiles for a capability, from (version, min_arch, max_arch)."""
    wanted = capability_of(capability)
    return [version for version, low, high in ranges if capability_of(low) <= wanted <= capability_of(high)]
