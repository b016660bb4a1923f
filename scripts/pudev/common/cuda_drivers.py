"""Which NVIDIA Linux driver each CUDA release needs (CUDA Toolkit release notes, Table 3), and the
floor per major under CUDA minor-version compatibility (same major, older driver: the CUDA
Compatibility guide). Both sides read it: `pudev verify` in the image, the docs' tag table and the
changelog on the host."""

from __future__ import annotations

# CUDA release -> (minimum driver, minimum driver under minor-version compatibility)
MINIMUM_DRIVER: dict[str, tuple[str, str]] = {
    "11.8": ("520.61.05", "450.80.02"),
    "12.1": ("530.30.02", "525.60.13"),
    "12.4": ("550.54.14", "525.60.13"),
    "12.6": ("560.28.03", "525.60.13"),
    "12.9": ("575.51.03", "525.60.13"),
    "13.0": ("580.65.06", "580"),
    "13.2": ("595.45.04", "580"),
    # 13.5's own minimum is in no public source we could read (2026-12-05): only CUDA 13's floor is known.
    "13.5": ("", "580"),
}
# Minor-version compatibility floors per major, for releases not in the table.
COMPAT_FLOOR = {"11": "450.80.02", "12": "525.60.13", "13": "580"}


def driver_floors(cuda: str) -> tuple[str, str]:
    """(the oldest Linux driver that runs CUDA `cuda`, the oldest that fully supports it), "" for both where
    neither is known: the minor-version compatibility floor, and CUDA's own minimum where that is higher and
    known. A floor of one driver branch (13.x: 580) is that branch's first release when the full minimum is in
    it, so there the two are the same."""
    full, compat = MINIMUM_DRIVER.get(cuda, ("", COMPAT_FLOOR.get(cuda.split(".")[0], "")))
    floor = compat or full
    if not floor:
        return "", ""
    if full and version_tuple(full)[0] > version_tuple(floor)[0]:
        return floor, full
    return full or floor, full or floor


def driver_minimum(cuda: str) -> str:
    """The oldest Linux driver that runs CUDA `cuda`, as the docs and the changelog state it."""
    runs, full = driver_floors(cuda)
    if not runs:
        return "unknown"
    return f"≥ {runs} (full support: ≥ {full})" if full != runs else f"≥ {runs}"


def driver_at_least(driver: str, floor: str) -> bool:
    """Whether driver `driver` (550.120) is `floor` (525.60.13, or a branch: 580) or newer."""
    return version_tuple(driver) >= version_tuple(floor)


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())
