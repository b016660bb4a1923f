"""Minimum NVIDIA Linux driver per CUDA release (CUDA Toolkit release notes,
Table 3), and with CUDA minor-version compatibility (same major, older driver)."""

from __future__ import annotations

from dataclasses import dataclass

# CUDA release -> (minimum driver, minimum driver under minor-version compatibility)
MINIMUM_DRIVER: dict[str, tuple[str, str]] = {
    "11.8": ("520.61.05", "450.80.02"),
    "12.1": ("530.30.02", "525.60.13"),
    "12.4": ("550.54.14", "525.60.13"),
}
# Minor-version compatibility floors per major, for releases not in the table.
COMPAT_FLOOR = {"11": "450.80.02", "12": "525.60.13"}


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


@dataclass(frozen=True)
class DriverVerdict:
    level: str  # "ok", "warning" or "error"
    message: str


def judge_driver(driver: str, cuda: str) -> DriverVerdict:
    full, compat = MINIMUM_DRIVER.get(cuda, ("", COMPAT_FLOOR.get(cuda.split(".")[0], "")))
    have = version_tuple(driver)
    if full and have >= version_tuple(full):
        return DriverVerdict("ok", f"driver {driver} >= {full} (CUDA {cuda})")
    if compat and have >= version_tuple(compat):
        need = f", full support needs >= {full}" if full else ""
        return DriverVerdict("warning", f"driver {driver} runs CUDA {cuda} only through minor-version "
                                        f"compatibility (>= {compat}{need}); PTX JIT of newer code may fail")
    floor = compat or full or "unknown"
    return DriverVerdict("error", f"driver {driver} is too old for CUDA {cuda} (needs >= {floor}"
                                  f"{', or >= ' + full + ' for full support' if full and full != floor else ''})")
