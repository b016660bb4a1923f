"""Minimum NVIDIA Linux driver per CUDA release (CUDA Toolkit release notes,
Table 3), and with CUDA minor-version compatibility (same major, older driver:
the CUDA Compatibility guide's table of floors per major)."""

from __future__ import annotations

from pudev.image.verdict import Verdict

# CUDA release -> (minimum driver, minimum driver under minor-version compatibility)
MINIMUM_DRIVER: dict[str, tuple[str, str]] = {
    "11.8": ("520.61.05", "450.80.02"),
    "12.1": ("530.30.02", "525.60.13"),
    "12.4": ("550.54.14", "525.60.13"),
    "12.6": ("560.28.03", "525.60.13"),
    "13.0": ("580.65.06", "580"),
    "13.2": ("595.45.04", "580"),
}
# Minor-version compatibility floors per major, for releases not in the table.
COMPAT_FLOOR = {"11": "450.80.02", "12": "525.60.13", "13": "580"}


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def judge_driver(driver: str, cuda: str) -> Verdict:
    full, compat = MINIMUM_DRIVER.get(cuda, ("", COMPAT_FLOOR.get(cuda.split(".")[0], "")))
    if not (full or compat):
        # A CUDA major newer than this table: nothing to judge against, which is not the user's fault.
        return Verdict("warn", f"no known minimum driver for CUDA {cuda}; driver {driver} not judged "
                                        "(update pudev's driver table)")
    have = version_tuple(driver)
    if full and have >= version_tuple(full):
        return Verdict("ok", f"driver {driver} >= {full} (CUDA {cuda})")
    if compat and have >= version_tuple(compat):
        if not full:  # a release newer than the table: only its major's floor is known
            return Verdict("warn", f"driver {driver} meets CUDA {cuda.split('.')[0]}.x's minor-version "
                                            f"floor (>= {compat}); CUDA {cuda}'s own minimum is not in pudev's "
                                            "table, so full support is not confirmed")
        return Verdict("warn", f"driver {driver} runs CUDA {cuda} only through minor-version "
                                        f"compatibility (>= {compat}, full support needs >= {full}); "
                                        "PTX JIT of newer code may fail")
    floor = compat or full
    return Verdict("fail", f"driver {driver} is too old for CUDA {cuda} (needs >= {floor}"
                                  f"{', or >= ' + full + ' for full support' if full and full != floor else ''})")
