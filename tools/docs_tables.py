"""The tables in README.md and docs/ that are rendered from data, never typed by hand: each sits
between `<!-- NAME:start -->` and `<!-- NAME:end -->` and is rendered by GENERATORS[NAME] from the
matrix, a file in benchmarks/ or the import contracts in pyproject.toml. A unit test fails when a
block differs from what its generator renders; `make docs` (this file, then the site) refreshes
every block in place. A maintainers' tool: the pudev package never imports it."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tomllib
from bench_ext import MEMORY_CAP, Run

from pudev.common.generated import block, markers, replace_block, rewrite_files
from pudev.common.table import markdown_table
from pudev.paths import REPO_ROOT, VARIANTS_FILE

DOCS = REPO_ROOT / "docs"
BENCHMARKS = REPO_ROOT / "benchmarks"
REFRESH = "make docs"
# Marked blocks that are hand-written on purpose: a test reads them (tests/e2e/test_jupyter.py runs the
# hardened `docker run` exactly as documented), so no generator owns them.
HAND_WRITTEN = frozenset({"hardened-run"})
START = re.compile(r"<!-- ([\w-]+):start -->")

BUILD_PROFILES = ("local", "local-current")
# The same profile's run on Docker 20.10's overlay2 store and on Docker 28.5's containerd image store.
STORE_RUNS = ("bench-build-local.json", "bench-build-local-containerd.json")
BUILD_SCENARIOS = {"naive": "naive single-stage Dockerfile (docker/bench/naive.Dockerfile), cold",
                   "cold": "cold (ratio: of the naive build)", "tool-edit": "an in-image tool file edited",
                   "pin-rarely-changing": "a pin changed in the rarely changing packages",
                   "pin-the-rest": "a pin changed in the rest of the packages",
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
    "image_torch_wheels_stage_on_the_build_platform": "image: torch's aarch64 wheels unpacked (on the build platform)",
    "image_base_wheels_stage_emulated": "image: the base's OS packages and Python (emulated)",
    "image_final_stage_cold": "image: the rest of a cold build",
    "image_cold_build_wall": "image: a cold build in all (wall time)",
    "import_torch_once": "`import torch` once",
    "in_image_suite_test_time_arm64_emulated": "CPU half of the in-image suite, arm64 emulated (test time)",
    "in_image_suite_test_time_amd64_native_same_variant": "the same on amd64, native (test time)",
    "in_image_suite_wall_arm64_emulated": "CPU half, arm64 emulated (wall time)",
    "platform_scope_wall_compile_cache_cold": "platform scope, compiler cache cold (wall time)",
    "platform_scope_wall_compile_cache_kept": "platform scope, compiler cache kept (wall time)",
    "platform_scope_test_time_compile_cache_cold": "platform scope, compiler cache cold (test time)",
    "platform_scope_test_time_compile_cache_kept": "platform scope, compiler cache kept (test time)",
    "platform_scope_extension_build_cold": "its CUDA extension build, cache cold",
    "platform_scope_extension_build_from_kept_cache": "its CUDA extension build, from the kept cache",
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


def variants_zh() -> str:
    from pudev.config.loader import load_matrix
    from pudev.config.variant_table import variants_markdown_zh

    return variants_markdown_zh(load_matrix(VARIANTS_FILE))


def tags() -> str:
    from pudev.config.loader import load_matrix
    from pudev.config.variant_table import tags_markdown

    return tags_markdown(load_matrix(VARIANTS_FILE))


def tags_zh() -> str:
    from pudev.config.loader import load_matrix
    from pudev.config.variant_table import tags_markdown_zh

    return tags_markdown_zh(load_matrix(VARIANTS_FILE))


# The proof's runs on a fresh machine: each shard's pytest report (tools/times_report.py) as SHARD.json, and
# the whole runs' wall time and disk as fresh-run.json.
SHARD_REPORTS = "benchmarks/shards"
FRESH_RUN = "fresh-run.json"
# Issue 65's budgets, of whole runs on a fresh machine (a shard has none of its own): minutes of wall time and
# GB of peak disk above the start, by the run's name in fresh-run.json. `.ci/run` again on the same machine
# (warm) has a time budget only.
RUN_BUDGETS: dict[str, tuple[int, int | None]] = {"the README's two commands": (40, 40), ".ci/run": (60, 45),
                                                   ".ci/run again (warm)": (25, None)}
HEAVY_S = 60  # a file that costs a minute or more in a shard has its own row


def _minutes(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s"


def _shards() -> tuple[str, ...]:
    """The shards' names, the newest first, in the order `make test-all` runs them: tests/e2e/shards.py, found
    as tests/conftest.py finds it."""
    e2e = str(REPO_ROOT / "tests" / "e2e")
    if e2e not in sys.path:
        sys.path.append(e2e)
    from shards import SHARDS

    return SHARDS


def shard_reports(folder: Path) -> dict[str, dict[str, Any]]:
    """Each shard's report, SHARD.json in `folder`, in the shards' order; a shard not measured yet has none."""
    reports: dict[str, dict[str, Any]] = {}
    for shard in _shards():
        if not (folder / f"{shard}.json").exists():
            continue
        report: dict[str, Any] = json.loads((folder / f"{shard}.json").read_text())
        if report.get("shard") != shard:
            raise ValueError(f"{folder / f'{shard}.json'} is the report of shard {report.get('shard')!r}")
        reports[shard] = report
    return reports


def _against(figure: float, budget: float | None, text: str) -> str:
    """A figure beside its budget's share, marked where it is over."""
    if budget is None:
        return text
    share = f"{100 * figure / budget:.0f}%"
    return f"{text} ({share}, **over**)" if figure > budget else f"{text} ({share})"


def _engine_line(engine: dict[str, str]) -> str:
    return (f", Docker {engine['server']} ({engine['storage_driver']}, {engine['image_store']} image store)"
            if engine else "")


def test_times_markdown(folder: Path) -> str:
    """The docs' proof-cost tables, from a folder of shard reports and fresh-run.json: the whole runs on a fresh
    machine against their budgets, each shard's run, then the files that cost a minute or more in a shard."""
    reports = shard_reports(folder) if folder.is_dir() else {}
    if not (folder / FRESH_RUN).exists() or not reports:
        return f"No fresh-machine run is recorded yet (`{SHARD_REPORTS}/`)."
    fresh: dict[str, Any] = json.loads((folder / FRESH_RUN).read_text())
    newest = next(iter(reports))  # SHARDS starts with the newest shard, whose report names the engine
    box, engine = fresh["machine"], reports[newest]["machine"].get("engine") or {}
    lines = [f"Measured {fresh['date']} on a fresh machine (a new clone, no engine, no images, no caches; "
             f"{fresh['free_at_start_gb']:.1f} GB free at the start) with {box['cpus']} CPUs and "
             f"{box['memory_gib']} GiB{_engine_line(engine)} (`{SHARD_REPORTS}/`).", ""]
    rows = []
    for run in fresh["runs"]:
        if run["name"] not in RUN_BUDGETS:
            raise ValueError(f"{FRESH_RUN}: no budget for the run {run['name']!r} (RUN_BUDGETS has "
                             f"{', '.join(map(repr, RUN_BUDGETS))})")
        minutes, gigabytes = RUN_BUDGETS[run["name"]]
        commands = ", ".join(f"`{command}`" for command in run["commands"])
        rows.append([run["name"], commands, _against(run["seconds"], minutes * 60, _minutes(run["seconds"])),
                     f"{minutes} min", _against(run["peak_above_start_gb"], gigabytes,
                                                f"{run['peak_above_start_gb']:.1f} GB"),
                     f"{gigabytes} GB" if gigabytes is not None else "none",
                     f"{run['lowest_free_gb']:.1f} GB"])
    lines += [markdown_table(["run", "commands", "wall time", "time budget", "peak disk above the start",
                              "disk budget", "lowest free"], rows), ""]
    if fresh.get("steps"):
        steps = "; ".join(f"`{step['command']}` {_minutes(step['seconds'])}" for step in fresh["steps"])
        lines += [f"Each command: {steps}.", ""]
    rows = []
    for shard in _shards():
        if shard not in reports:
            rows.append([f"`{shard}`", "", "not measured", "", ""])
            continue
        report = reports[shard]
        outcomes = ", ".join(f"{count} {name}" for name, count in sorted(report["outcomes"].items()))
        rows.append([f"`{shard}`", report["tests"], outcomes, _minutes(report["total_s"]),
                     f"{report['disk']['peak_above_start_gb']:.1f} GB"])
    lines += [f"Each shard's pytest run, in the order `make test-all` runs them (`{SHARD_REPORTS}/SHARD.json`):",
              "", markdown_table(["shard", "tests", "outcomes", "wall time", "peak disk above its start"], rows), ""]
    files = sorted(((row, shard) for shard, report in reports.items() for row in report["files"]),
                   key=lambda item: (-item[0]["seconds"], item[0]["file"], item[1]))
    rows = [[f"`{row['file']}`", f"`{shard}`", row["tests"], f"{row['seconds']:.0f}"]
            for row, shard in files if row["seconds"] >= HEAVY_S]
    rest = [(row, shard) for row, shard in files if row["seconds"] < HEAVY_S]
    if rest:
        in_shards = [shard for shard in reports if any(other == shard for _, other in rest)]
        rows.append([f"{len({row['file'] for row, _ in rest})} other files",
                     ", ".join(f"`{shard}`" for shard in in_shards), sum(row["tests"] for row, _ in rest),
                     f"{sum(row['seconds'] for row, _ in rest):.0f}"])
    lines += ["The files that cost a minute or more in a shard:", "",
              markdown_table(["file", "shard", "tests", "seconds"], rows)]
    return "\n".join(lines)


def test_times() -> str:
    return test_times_markdown(REPO_ROOT / SHARD_REPORTS)


def _build_runs() -> dict[str, dict[str, Any]]:
    return {profile: _benchmark(f"bench-build-{profile}.json") for profile in BUILD_PROFILES}


def _profile_header(profile: str, image: str) -> str:
    return f"`{profile}` ({image.rsplit(':', 1)[-1]})"


def _speed_rows(columns: list[dict[str, Any]]) -> list[list[str]]:
    """One row per scenario of the first run, one cell per run: seconds, their share, what users pull again."""
    first = columns[0]
    measured = [{item["scenario"]: item for item in run["scenarios"]} for run in columns]
    rows = []
    for scenario, item in measured[0].items():
        cells = []
        for found in (by_scenario[scenario] for by_scenario in measured):
            cell = f"{found['seconds']:.1f} s"
            if scenario != "naive":
                cell += f", {found['ratio']:.1%}"
            if len(found["samples"]) > 1:
                cell += f" (median of {', '.join(f'{sample:.1f}' for sample in sorted(found['samples']))} s)"
            if scenario != "naive":
                cell += f"; {found['download_bytes'] / 1e6:.0f} MB pulled again"
            cells.append(cell)
        goals = [f"<= {first['targets'][scenario]:.0%}"] if scenario in first["targets"] else []
        goals += [f"<= {first['download_targets_mb'][scenario]:.0f} MB pulled"] \
            if scenario in first["download_targets_mb"] else []
        label = BUILD_SCENARIOS.get(scenario, scenario) + (f" ({item['probe'].split()[0]})" if item["probe"] else "")
        rows.append([label, *cells, ", ".join(goals)])
    return rows


def build_speed() -> str:
    """`make bench-build`'s scenarios, one column per stand-in profile."""
    runs = _build_runs()
    dates = sorted({run["measured_at"][:10] for run in runs.values()})
    headers = ["scenario", *(_profile_header(p, runs[p]["image"]) for p in BUILD_PROFILES), "target"]
    sources = ", ".join(f"`benchmarks/bench-build-{profile}.json`" for profile in BUILD_PROFILES)
    return (f"Measured {' and '.join(dates)} with `make bench-build` ({sources}).\n\n"
            + markdown_table(headers, _speed_rows(list(runs.values()))))


def build_speed_by_store() -> str:
    """The first profile's scenarios on each image store, one column per engine."""
    runs = {name: _benchmark(name) for name in STORE_RUNS}
    headers = ["scenario", *(f"{run['engine']} ({run['measured_at'][:10]})" for run in runs.values()), "target"]
    sources = ", ".join(f"`benchmarks/{name}`" for name in runs)
    return (f"`{BUILD_PROFILES[0]}` with `make bench-build` on each store, on this machine ({sources}).\n\n"
            + markdown_table(headers, _speed_rows(list(runs.values()))))


def build_sizes() -> str:
    """The image's own layers, compressed as a registry holds them: what a first pull of a release costs."""
    runs = _build_runs()
    rows = [["the image's own layers, compressed", *(f"{sum(run['own_layers_bytes']) / 1e6:.0f} MB"
                                                     for run in runs.values()),
             f"<= {runs[BUILD_PROFILES[0]]['own_layers_target_mb']:.0f} MB (`local`, cu121)"],
            ["its three largest layers", *(", ".join(f"{size / 1e6:.0f}" for size in run["own_layers_bytes"][:3])
                                           + " MB" for run in runs.values()), ""]]
    headers = ["", *(_profile_header(p, runs[p]["image"]) for p in BUILD_PROFILES), "target"]
    return markdown_table(headers, rows)


def _ext_runs(files: Sequence[str]) -> dict[str, tuple[Run, dict[str, Any]]]:
    """scenario -> (the run, its file's data), the first file that measured a scenario winning."""
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
    """The folders and what each may not import: pyproject.toml's import-linter contracts, which the lint
    gate enforces (one contract per folder, in the order written)."""
    with (REPO_ROOT / "pyproject.toml").open("rb") as handle:
        contracts = tomllib.load(handle)["tool"]["importlinter"]["contracts"]
    forbidden = {contract["id"]: tuple(contract["forbidden_modules"]) for contract in contracts}
    return tuple(forbidden), forbidden


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
    over = ", **over** as zstd" if own["zstd"] > data["budget_bytes"] else ""
    base = data["base_bytes"]
    rows.append(["the base's layers (pulled once, shared by every release)", f"{base['gzip'] / 1e6:.0f}",
                 f"{base['zstd'] / 1e6:.0f}"])
    return (f"`{data['variant']}`, measured {data['measured_at'][:10]} from the pushed manifests by the podman "
            f"e2e test (`benchmarks/download-size.json`; zstd: {data['zstd']}; budget "
            f"{data['budget_bytes'] / 1e6:.0f} MB{over}).\n\n"
            + markdown_table(["layer (MB, compressed)", "gzip", "zstd"], rows))


GENERATORS: dict[str, Callable[[], str]] = {
    "variants": variants, "variants-zh": variants_zh, "tags": tags, "tags-zh": tags_zh, "test-times": test_times,
    "build-speed": build_speed,
    "build-speed-by-store": build_speed_by_store,
    "build-sizes": build_sizes, "ext-bench": ext_bench, "compile-peaks": compile_peaks, "arm64-costs": arm64_costs,
    "layering": layering, "ext-threads": ext_threads, "download-size": download_size,
}


def documents() -> list[Path]:
    """Every file that may hold a generated block: the READMEs and the docs."""
    from pudev.config.variant_table import pages

    return pages(REPO_ROOT)


def block_names(text: str) -> list[str]:
    return START.findall(text)


def rendered(text: str, cache: dict[str, str] | None = None) -> str:
    """`text` with each generated block it holds rendered anew (hand-written blocks untouched)."""
    cache = {} if cache is None else cache
    for name in block_names(text):
        if name in HAND_WRITTEN:
            continue
        if name not in GENERATORS:
            raise KeyError(f"<!-- {name}:start --> names no generator in tools/docs_tables.py")
        if block(text, markers(name)) is None:
            raise ValueError(f"<!-- {name}:start --> has no matching <!-- {name}:end -->")
        if name not in cache:
            try:
                cache[name] = GENERATORS[name]()
            except (KeyError, OSError, ValueError) as error:  # a benchmark file missing, or of an older format
                raise SystemExit(f"docs_tables: error: the {name} table cannot be rendered from benchmarks/ "
                                 f"({type(error).__name__}: {error}); run the benchmark that writes it again") from None
        text = replace_block(text, markers(name), cache[name])
    return text


def refresh(paths: Sequence[Path] | None = None) -> list[Path]:
    """Render every generated block in place; returns the files that changed."""
    cache: dict[str, str] = {}
    return rewrite_files(documents() if paths is None else paths, lambda text: rendered(text, cache))


def main() -> None:
    changed = refresh()
    for path in changed:
        print(f"refreshed {path.relative_to(REPO_ROOT)}")
    if not changed:
        print("every generated block is current")


if __name__ == "__main__":
    main()
