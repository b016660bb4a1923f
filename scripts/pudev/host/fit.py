"""Which tags run on this host, which one to take, and why each other one does not fit: from the matrix
alone, by the rules the docs' tag table is rendered with (pudev.config.variant_table: its order and GPU
columns; pudev.common.cuda_drivers: its driver column)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pudev.common.cuda_drivers import driver_at_least, driver_floors, version_tuple
from pudev.common.gpu_arch import arch_name, sm_name
from pudev.common.platforms import architecture
from pudev.config.model import Matrix, Variant
from pudev.config.variant_table import gpu_span, newest_first, runs_on
from pudev.host.gpus import Gpu, HostGpus


@dataclass(frozen=True)
class Fit:
    """One tag on this host: whether it runs, whether with full support, and why not."""

    tag: str
    variant: Variant  # its build for this host's platform, else its first
    built_here: bool  # built for this host's platform
    runs: bool
    full: bool  # runs, and the driver fully supports its CUDA
    why: tuple[str, ...]  # why it does not run, or not fully; empty when it does


@dataclass(frozen=True)
class Choice:
    tag: str  # "" when no tag runs here
    why: str


def _span(variant: Variant) -> str:
    low, high = gpu_span(variant)
    names = arch_name(low) if arch_name(low) == arch_name(high) else f"{arch_name(low)} to {arch_name(high)}"
    return f"{names}, {sm_name(low)} to {sm_name(high)}"


def _gpu_reasons(variant: Variant, gpus: tuple[Gpu, ...]) -> list[str]:
    outside = [gpu for gpu in gpus if gpu.capability and not runs_on(variant, gpu.capability)]
    return [f"the {gpu.name} is {sm_name(gpu.capability)} ({arch_name(gpu.capability)}), outside what torch "
            f"{variant.torch} for CUDA {variant.cuda} runs on ({_span(variant)}): no kernel image is available "
            f"for execution on the device" for gpu in _unique(outside)]


def _unique(gpus: list[Gpu]) -> list[Gpu]:
    seen: dict[tuple[str, str], Gpu] = {}
    for gpu in gpus:
        seen.setdefault((gpu.name, gpu.capability), gpu)
    return list(seen.values())


def _driver_reasons(variant: Variant, driver: str) -> tuple[bool, bool, list[str]]:
    """(runs, fully, why) for the host's driver against the variant's CUDA."""
    runs, full = driver_floors(variant.cuda)
    if not runs:
        return False, False, [f"the driver CUDA {variant.cuda} needs is unknown (pudev.common.cuda_drivers has no "
                              f"entry for it)"]
    if not driver_at_least(driver, runs):
        return False, False, [f"driver {driver} is below {runs}, the oldest that runs CUDA {variant.cuda}"]
    if not driver_at_least(driver, full):
        return True, False, [f"driver {driver} is below full support for CUDA {variant.cuda} (≥ {full}): code "
                             f"compiled by a newer toolkit may fail to load"]
    return True, True, []


def judge(matrix: Matrix, platform: str, host: HostGpus) -> list[Fit]:
    """Every tag, in the tag table's order, judged for this platform, driver and GPUs (none: the CPU)."""
    fits = []
    for name, variant in newest_first(matrix):
        builds = matrix.builds.get(name, {variant.platform: variant})
        build = builds.get(platform)
        if build is None:
            here = architecture(platform) if platform else "a machine pudev builds for neither amd64 nor arm64"
            built = " and ".join(architecture(item) for item in builds)
            fits.append(Fit(name, variant, False, False, False, (f"built for {built} only; this host is {here}",)))
            continue
        if not host.gpus:
            fits.append(Fit(name, build, True, True, True, ()))
            continue
        runs, full, why = _driver_reasons(build, host.driver)
        gpu_why = _gpu_reasons(build, host.gpus)
        fits.append(Fit(name, build, True, runs and not gpu_why, full and not gpu_why, tuple(gpu_why + why)))
    return fits


def _named(gpus: tuple[Gpu, ...]) -> str:
    counts = Counter(gpu.name for gpu in gpus)
    return " and ".join(name if count == 1 else f"{count} x {name}" for name, count in counts.items())


def _nearest_driver(fits: list[Fit], gpus: tuple[Gpu, ...]) -> str:
    """The driver update that gets the newest torch this host's GPUs run, with the lowest floor among its tags."""
    covering = [fit for fit in fits if fit.built_here and not _gpu_reasons(fit.variant, gpus)
                and driver_floors(fit.variant.cuda)[1]]
    if not covering:
        return ""
    newest = max(fit.variant.torch_release for fit in covering)
    target = min((fit for fit in covering if fit.variant.torch_release == newest),
                 key=lambda fit: version_tuple(driver_floors(fit.variant.cuda)[1]))
    return f"update the host's NVIDIA driver to {driver_floors(target.variant.cuda)[1]} or newer for {target.tag} " \
           f"(torch {target.variant.torch})"


def choose(matrix: Matrix, fits: list[Fit], host: HostGpus) -> Choice:
    """The tag to take: the newest torch the driver and GPUs fully support; else the newest that runs (under
    CUDA's minor-version compatibility); with no GPU, `latest` where it is built for this platform, else the
    newest torch."""
    running = [fit for fit in fits if fit.runs]
    if not host.gpus:
        if not running:
            return Choice("", "no tag is built for this host's platform")
        latest = [fit for fit in running if fit.tag == matrix.default_variant]
        chosen = (latest or running)[0]
        what = "`latest`, the newest torch" if latest else "the newest torch built for this platform"
        return Choice(chosen.tag, f"no NVIDIA GPU here, so every tag runs on the CPU only; {chosen.tag} is {what} "
                                  f"({chosen.variant.torch})")
    named = _named(host.gpus)
    full = [fit for fit in running if fit.full]
    if full:
        chosen = full[0]
        why = f"the newest torch ({chosen.variant.torch}) that driver {host.driver} and the {named} fully support"
        newer = [fit for fit in running if not fit.full and fit.variant.torch_release > chosen.variant.torch_release]
        if newer:
            why += (f"; {newer[0].tag} (torch {newer[0].variant.torch}) also runs, below full support: take it if "
                    f"you need that torch, or {_nearest_driver(fits, host.gpus) or 'update the driver'}")
        return Choice(chosen.tag, why)
    if running:
        chosen = running[0]
        nearest = _nearest_driver(fits, host.gpus)
        return Choice(chosen.tag, f"the newest torch ({chosen.variant.torch}) that runs on driver {host.driver} and "
                                  f"the {named}, below full support"
                                  + (f"; for full support, {nearest}" if nearest else ""))
    nearest = _nearest_driver(fits, host.gpus)
    return Choice("", f"no tag runs on driver {host.driver} and the {named}: "
                      + (nearest or "no variant's torch runs on this GPU; add one to the matrix whose CUDA does"))
