"""The host's NVIDIA driver judged against a CUDA release's minimum (pudev.common.cuda_drivers)."""

from __future__ import annotations

from pudev.common.cuda_drivers import COMPAT_FLOOR, MINIMUM_DRIVER, version_tuple
from pudev.image.verdict import Verdict


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
