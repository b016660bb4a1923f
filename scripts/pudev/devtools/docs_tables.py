"""The tables in README.md and docs/ that are rendered from data, never typed by hand: each sits
between `<!-- NAME:start -->` and `<!-- NAME:end -->` and is rendered by GENERATORS[NAME] from the
matrix, a file in benchmarks/ or the layout rules in tests/lint/test_layout.py. A unit test fails
when a block differs from what its generator renders; `python -m pudev.devtools.docs_tables`
refreshes every block in place."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pudev.common.generated import block, markers, replace_block
from pudev.common.table import markdown_table
from pudev.paths import REPO_ROOT, VARIANTS_FILE

if TYPE_CHECKING:
    from pudev.devtools.benchext import Run

DOCS = REPO_ROOT / "docs"
BENCHMARKS = REPO_ROOT / "benchmarks"
LAYOUT_RULES = REPO_ROOT / "tests" / "lint" / "test_layout.py"
REFRESH = "python -m pudev.devtools.docs_tables"
# Marked blocks that are hand-written on purpose: a test reads them (tests/e2e/test_jupyter.py runs the
# hardened `docker run` exactly as documented), so no generator owns them.
HAND_WRITTEN = frozenset({"hardened-run"})
START = re.compile(r"<!-- ([\w-]+):start -->")

BUILD_PROFILES = ("local", "local-current")
BUILD_SCENARIOS = {"naive": "naive single-stage Dockerfile (docker/bench/naive.Dockerfile), cold",
                   "cold": "cold (ratio: of the naive build)", "tool-edit": "an in-image tool file edited",
                   "mirror-change": "MIRROR changed", "no-op": "no-op rebuild"}
# Each profile's `make bench-ext` runs, in the order their rows are shown; a scenario measured twice
# is taken from the first file that has it.
EXT_RUNS = {"local": ("bench-ext-local-speed.json", "bench-ext-local-3g-calibration.json",
                      "bench-ext-local-memory.json"),
            "local-current": ("bench-ext-local-current-speed.json", "bench-ext-local-current-memory.json")}
# Where each compile's own peak memory was logged (PUDEV_COMPILE_LOG), and which run of that file.
COMPILE_LOGS = (("`local` (torch 2.4.1 stand-in, nvcc 12.4)", "compile-jobs-local.json", ""),
                ("`local-current` (torch 2.15.0 stand-in, nvcc 13.2)", "bench-ext-local-current-memory.json",
                 "derived jobs, 4g cap"))
ARM64_STEPS = {
    "standin_os_debootstrap_arm64": "stand-in OS (debootstrap, arm64)",
    "standin_toolkits_12_4_and_13_2_arm64": "stand-in toolkits 12.4 and 13.2 (arm64)",
    "image_base_wheels_stage_pip_install_torch": "image: pip installing torch's aarch64 wheels (the base stage)",
    "image_rest_of_build_cold": "image: the rest of a cold build",
    "image_rebuild_after_a_late_layer_change": "image: rebuild after a late-layer change",
    "import_torch_once": "`import torch` once",
    "in_image_suite_test_time_arm64_emulated": "CPU half of the in-image suite, arm64 emulated (test time)",
    "in_image_suite_test_time_amd64_native_same_variant": "the same on amd64, native (test time)",
    "in_image_suite_wall_arm64_emulated": "CPU half, arm64 emulated (wall time)",
    "platform_proof_wall_compile_cache_cold": "platform proof, compiler cache cold (wall time)",
    "platform_proof_wall_compile_cache_kept": "platform proof, compiler cache kept (wall time)",
    "platform_proof_test_time_compile_cache_cold": "platform proof, compiler cache cold (test time)",
    "platform_proof_test_time_compile_cache_kept": "platform proof, compiler cache kept (test time)",
    "platform_proof_extension_build_cold": "its CUDA extension build, cache cold",
    "platform_proof_extension_build_from_kept_cache": "its CUDA extension build, from the kept cache",
}
ARM64_NOTES = {"suite_outcome_arm64_first_run": "The first emulated run of the CPU half",
               "suite_outcome_arm64_whole_cpu_half_last_run": "The last emulated run of the CPU half",
               "qemu_7_2": "qemu 7.2", "notes": "How measured"}
MIB = 1024**2


def _benchmark(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((BENCHMARKS / name).read_text())
    return data


def _duration(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole} s" if whole < 120 else f"{whole} s ({whole // 60} min {whole % 60:02d} s)"


def variants() -> str:
    from pudev.config.loader import load_matrix
    from pudev.config.variant_table import variants_markdown

    return variants_markdown(load_matrix(VARIANTS_FILE))


def tags() -> str:
    from pudev.config.loader import load_matrix
    from pudev.config.variant_table import tags_markdown

    return tags_markdown(load_matrix(VARIANTS_FILE))


def test_times() -> str:
    from pudev.devtools.testtimes import REPORT, markdown

    return markdown(json.loads((REPO_ROOT / REPORT).read_text()))


def _build_runs() -> dict[str, dict[str, Any]]:
    return {profile: _benchmark(f"bench-build-{profile}.json") for profile in BUILD_PROFILES}


def _profile_header(profile: str, image: str) -> str:
    return f"`{profile}` ({image.rsplit(':', 1)[-1]})"


def _samples(seconds: list[float], releases: list[str]) -> str:
    """'32.0, 40.1, 45.6 s', or with the release each pin sample installed, '5.0 s at 0.19.1, ...'."""
    if len(releases) != len(seconds):  # not a pin, or measured before the releases were kept
        return f"{', '.join(f'{sample:.1f}' for sample in sorted(seconds))} s"
    return ", ".join(f"{sample:.1f} s at {release}" for sample, release in sorted(zip(seconds, releases, strict=True)))


def build_speed() -> str:
    """`make bench-build`'s scenarios, one column per stand-in profile."""
    from pudev.devtools.benchbuild import PIN_CHANGE, PIN_KEPT, Measurement

    runs = _build_runs()
    measured = {profile: {item["scenario"]: Measurement(**item) for item in run["scenarios"]}
                for profile, run in runs.items()}
    first = runs[BUILD_PROFILES[0]]
    rows = []
    for scenario in measured[BUILD_PROFILES[0]]:
        probe = measured[BUILD_PROFILES[0]][scenario].probe
        cells = []
        for profile in BUILD_PROFILES:
            item = measured[profile][scenario]
            cell = f"{item.seconds:.1f} s" if scenario == "naive" else f"{item.seconds:.1f} s, {item.ratio:.1%}"
            if len(item.samples) > 1:
                cell += f" (median of {_samples(item.samples, item.releases)})"
            cells.append(cell)
        target = first["targets"].get(scenario)
        if scenario.startswith(PIN_CHANGE):
            label = f"a pin changed in the {scenario.removeprefix(PIN_CHANGE)} layer ({probe}), layers cut again"
        elif scenario.startswith(PIN_KEPT):
            label = f"the same pin, layers kept (`pudev lock --keep-layers`; {scenario.removeprefix(PIN_KEPT)})"
        else:
            label = BUILD_SCENARIOS.get(scenario, scenario)
        rows.append([label, *cells, "" if target is None else f"<= {target:.0%}"])
    dates = sorted({run["measured_at"][:10] for run in runs.values()})
    headers = ["scenario", *(_profile_header(p, runs[p]["sizes"]["image"]) for p in BUILD_PROFILES), "target"]
    sources = ", ".join(f"`benchmarks/bench-build-{profile}.json`" for profile in BUILD_PROFILES)
    return f"Measured {' and '.join(dates)} with `make bench-build` ({sources}).\n\n" + markdown_table(headers, rows)


def _size_parts(sizes: dict[str, Any]) -> dict[str, str]:
    """The image's size split the way the Dockerfile builds it: base, toolkits, OS packages, package layers."""
    toolkits, packages, other = [], [], []
    os_packages = 0.0
    for layer in sizes["layers"]:
        step, size = layer["created_by"], layer["size"] / MIB
        if toolkit := re.search(r"COPY /usr/local/cuda-([\d.]+) ", step):
            toolkits.append(f"{toolkit.group(1)}: {size:.0f}")
        elif "install-os-packages.sh" in step:
            os_packages += size
        elif "/staged/packages-" in step:  # a package stage's files, copied
            packages.append(f"{size:.0f}")
        else:
            other.append(size)
    return {"base": f"{sizes['base_size'] / MIB:.0f}", "toolkits": ", ".join(toolkits),
            "os": f"{os_packages:.0f}", "packages": " + ".join(packages),
            "other": f"{max(other, default=0):.1f} or less each", "image": f"{sizes['size'] / MIB:.0f}"}


def _layer_names() -> list[str]:
    from pudev.building.lock_slices import read_layers
    from pudev.building.requirement_locks import layers_path

    return [layer.name for layer in read_layers(layers_path().read_text())]


def build_sizes() -> str:
    """Sizes in MiB, of each stand-in image and of what each of its layers adds."""
    runs = _build_runs()
    parts = {profile: _size_parts(run["sizes"]) for profile, run in runs.items()}
    labels = {"base": "stand-in base (OS, Python and torch)", "toolkits": "CUDA toolkits",
              "os": "compilers, build tools, shells (OS packages)",
              "packages": f"Python packages: {' + '.join(_layer_names())} (one layer each)",
              "other": "every other layer", "image": "the image"}
    rows = [[label, *(parts[profile][key] for profile in BUILD_PROFILES)] for key, label in labels.items()]
    headers = ["MiB", *(_profile_header(p, runs[p]["sizes"]["image"]) for p in BUILD_PROFILES)]
    return markdown_table(headers, rows)


def _ext_runs(files: Sequence[str]) -> dict[str, tuple[Run, dict[str, Any]]]:
    """scenario -> (the run, its file's data), the first file that measured a scenario winning."""
    from pudev.devtools.benchext import Run

    found: dict[str, tuple[Run, dict[str, Any]]] = {}
    for name in files:
        data = _benchmark(name)
        for item in data["runs"]:
            # Older files predate the per-compile log: no largest job, no jobs.
            run = Run(**{"largest_job_gib": 0.0, "jobs": [], **item})
            found.setdefault(run.scenario, (run, data))
    return found


def _ext_cell(run: Run) -> str:
    if run.scenario == "cold":
        return f"{run.seconds:.0f} s, peak {run.peak_gib:.2f} GiB, MAX_JOBS={run.max_jobs}"
    if run.scenario == "warm":
        return f"{run.seconds:.0f} s, {run.ratio:.1%} of cold ({run.cache_hits} compiles hit the cache)"
    if run.scenario == "wheelhouse":
        return f"{run.seconds:.0f} s, {run.ratio:.1%} of cold"
    largest = f", largest compile {run.largest_job_gib:.2f} GiB" if run.largest_job_gib else ""
    if run.ok:
        return (f"finished in {run.seconds:.0f} s, MAX_JOBS={run.max_jobs}, peak {run.peak_gib:.2f} GiB, "
                f"no OOM kill{largest}")
    return (f"failed after {run.seconds:.0f} s: {run.oom_kills} OOM kill(s), MAX_JOBS={run.max_jobs}, "
            f"peak {run.peak_gib:.2f} GiB{largest}")


def _ext_label(scenario: str) -> str:
    labels = {"cold": "cold: an empty compiler cache",
              "warm": "warm: the cache volume kept, a new container, a new pip build directory",
              "wheelhouse": "a fresh container installing from the wheelhouse volume"}
    capped = re.fullmatch(r"(ninja default|derived jobs), (\d+)g cap", scenario)
    if capped is None:
        return labels.get(scenario, scenario)
    jobs = "ninja's default jobs (CPUs + 2)" if capped.group(1) == "ninja default" else "the derived jobs"
    return f"{capped.group(2)} GiB cap, {jobs}"


def ext_bench() -> str:
    """`make bench-ext`: a real extension compiled in each profile's image, one column per profile."""
    from pudev.devtools.benchext import MEMORY_CAP

    runs = {profile: _ext_runs(files) for profile, files in EXT_RUNS.items()}
    scenarios = list(dict.fromkeys(scenario for found in runs.values() for scenario in found))
    _, first_data = next(iter(runs[BUILD_PROFILES[0]].values()))
    targets = first_data["targets"]
    rows = []
    for scenario in scenarios:
        cells = [_ext_cell(runs[profile][scenario][0]) if scenario in runs[profile] else "" for profile in EXT_RUNS]
        target = f"<= {targets[scenario]:.0%}" if scenario in targets else ""
        if scenario == f"derived jobs, {MEMORY_CAP} cap":
            target = "finishes"
        rows.append([_ext_label(scenario), *cells, target])
    images = {profile: next(iter(found.values()))[1]["image"] for profile, found in runs.items()}
    extension, env = first_data["extension"], first_data["build_env"]
    sources = ", ".join(f"`benchmarks/{name}`" for files in EXT_RUNS.values() for name in files)
    intro = (f"{extension['name']} {extension['version']} for `TORCH_CUDA_ARCH_LIST={env['TORCH_CUDA_ARCH_LIST']}` "
             f"on {first_data['cpus']} CPUs ({sources}).")
    headers = ["scenario", *(_profile_header(p, images[p]) for p in EXT_RUNS), "target"]
    notes = [f"- `benchmarks/{name}`: {note}" for files in EXT_RUNS.values() for name in files
             if (note := _benchmark(name).get("note"))]
    return "\n".join([intro, "", markdown_table(headers, rows), *(["", *notes] if notes else [])])


def compile_peaks() -> str:
    """Each compile's own peak memory (its largest process), the measure behind the per-job figure."""
    rows = []
    for label, name, scenario in COMPILE_LOGS:
        data = _benchmark(name)
        jobs = data["jobs"] if not scenario else next(r["jobs"] for r in data["runs"] if r["scenario"] == scenario)
        cells = []
        for compiler in ("c++", "nvcc"):
            peaks = [job["peak_gib"] for job in jobs if job["compiler"] == compiler and job["source"]]
            cells.append(f"{min(peaks):.2f} to {max(peaks):.2f} ({len(peaks)} files)")
        rows.append([label, *cells, f"`benchmarks/{name}`"])
    return markdown_table(["build", "g++ compiles, GiB", "nvcc compiles, GiB", "source"], rows)


def arm64_costs() -> str:
    """What building and proving the arm64 image under emulation costs on an x86 host."""
    data = _benchmark("arm64-emulation.json")
    rows = [[ARM64_STEPS.get(step, step), _duration(seconds)] for step, seconds in data["seconds"].items()]
    rows += [[f"image size, {platform.removeprefix('linux/')} (uncompressed)", f"{size / 1e9:.2f} GB"]
             for platform, size in data["image_bytes_uncompressed"].items()]
    intro = f"Measured {data['measured']} on {data['machine']} (`benchmarks/arm64-emulation.json`)."
    outcomes = [f"- {label}: {data[key]}" for key, label in ARM64_NOTES.items() if key in data]
    return "\n".join([intro, "", markdown_table(["step", "time"], rows), "", *outcomes])


def layout_rules() -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """FOLDERS and FORBIDDEN from tests/lint/test_layout.py: the one place the layering is written down."""
    spec = importlib.util.spec_from_file_location("pudev_layout_rules", LAYOUT_RULES)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(LAYOUT_RULES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.FOLDERS), {folder: tuple(names) for folder, names in module.FORBIDDEN.items()}


def layering_markdown(folders: Sequence[str], forbidden: dict[str, tuple[str, ...]]) -> str:
    """Per folder, the pudev folders it may import and those that may import it."""

    def names(items: Sequence[str]) -> str:
        return ", ".join(f"`{item}/`" for item in items) or "none"

    rows = []
    for folder in folders:
        denied = forbidden[folder]
        allowed = [other for other in folders if other != folder and f"pudev.{other}" not in denied]
        refused = [other for other in folders if other != folder and other not in allowed]
        may = names(allowed) if len(allowed) <= len(refused) else f"all but {names(refused)}"
        modules = [name for name in denied if name.removeprefix("pudev.") not in folders]
        if modules:
            may += "; not " + ", ".join(f"`{name}`" for name in modules)
        users = [other for other in folders if other != folder and f"pudev.{folder}" not in forbidden[other]]
        rows.append([f"`{folder}/`", may, names(users)])
    return markdown_table(["folder", "may import", "may be imported by"], rows)


def layering() -> str:
    return layering_markdown(*layout_rules())


def ext_threads() -> str:
    """`bench-ext --part threads` before and after the thread rule changed (one machine, one image each)."""
    runs = {when: _benchmark(name) for when, name in (("before", "bench-ext-threads-before.json"),
                                                      ("after", "bench-ext-threads.json"))}
    rows = []
    for label, key in (("pudev's derived MAX_JOBS and threads", "derived_seconds"),
                       ("ninja's default jobs, the package's own threads", "ninja_default_seconds")):
        rows.append([label, *(f"{runs[when]['threads'][key]:.0f} s" for when in runs), ""])
    rows.append(["derived / ninja's default", *(f"{runs[when]['threads']['ratio']:.3f}" for when in runs),
                 f"<= {runs['after']['threads']['target']}"])
    sources = ", ".join(f"`benchmarks/{name}`" for name in ("bench-ext-threads-before.json", "bench-ext-threads.json"))
    return (f"The synthetic package, cold, no memory cap, {runs['after']['cpus']} CPUs ({sources}).\n\n"
            + markdown_table(["cold build", "before (launcher capped threads by CPUs)", "after (by memory only)",
                              "target"], rows))


def download_size() -> str:
    """The image's own layers as a user downloads them: gzip (the default tags) and zstd (TAG-zstd)."""
    data = _benchmark("download-size.json")
    rows = [[item["step"][:70].replace("|", "/"), f"{item['gzip'] / 1e6:.1f}", f"{item['zstd'] / 1e6:.1f}"]
            for item in data["own_layers"] if item["gzip"] >= 1_000_000]
    own = data["own_bytes"]
    rows.append(["**the image's own layers**", f"**{own['gzip'] / 1e6:.0f}**", f"**{own['zstd'] / 1e6:.0f}**"])
    base = data["base_bytes"]
    rows.append(["the base's layers (pulled once, shared by every release)", f"{base['gzip'] / 1e6:.0f}",
                 f"{base['zstd'] / 1e6:.0f}"])
    return (f"`{data['variant']}`, measured {data['measured_at'][:10]} from the pushed manifests by the podman "
            f"e2e test (`benchmarks/download-size.json`; zstd -{data['zstd_level']} for the image's own layers, "
            f"-{data['zstd_base_level']} for the base's; budget {data['budget_bytes'] / 1e6:.0f} MB).\n\n"
            + markdown_table(["layer (MB, compressed)", "gzip", "zstd"], rows))


GENERATORS: dict[str, Callable[[], str]] = {
    "variants": variants, "tags": tags, "test-times": test_times, "build-speed": build_speed,
    "build-sizes": build_sizes, "ext-bench": ext_bench, "compile-peaks": compile_peaks, "arm64-costs": arm64_costs,
    "layering": layering, "ext-threads": ext_threads, "download-size": download_size,
}


def documents() -> list[Path]:
    """Every file that may hold a generated block: the README and the docs."""
    return [REPO_ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def block_names(text: str) -> list[str]:
    return START.findall(text)


def rendered(text: str, cache: dict[str, str] | None = None) -> str:
    """`text` with each generated block it holds rendered anew (hand-written blocks untouched)."""
    cache = {} if cache is None else cache
    for name in block_names(text):
        if name in HAND_WRITTEN:
            continue
        if name not in GENERATORS:
            raise KeyError(f"<!-- {name}:start --> names no generator in pudev.devtools.docs_tables")
        if block(text, markers(name)) is None:
            raise ValueError(f"<!-- {name}:start --> has no matching <!-- {name}:end -->")
        if name not in cache:
            cache[name] = GENERATORS[name]()
        text = replace_block(text, markers(name), cache[name])
    return text


def refresh(paths: Sequence[Path] | None = None) -> list[Path]:
    """Render every generated block in place; returns the files that changed."""
    cache: dict[str, str] = {}
    changed = []
    for path in documents() if paths is None else paths:
        text = path.read_text()
        updated = rendered(text, cache)
        if updated != text:
            path.write_text(updated)
            changed.append(path)
    return changed


def main() -> None:
    changed = refresh()
    for path in changed:
        print(f"refreshed {path.relative_to(REPO_ROOT)}")
    if not changed:
        print("every generated block is current")


if __name__ == "__main__":
    main()
