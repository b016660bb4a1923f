"""The compile jobs that fit a container, read from made-up cgroup trees (v1 and v2), and the
launcher's handling of nvcc's flags: no Docker needed (tests/image checks the real cgroup)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pudev.image.compilers import cgroup, launcher, masquerade, oom, parallelism

GIB = 1024**3


def v2_tree(root: Path, *, memory_max: str = "max", current: int = 0, file_cache: int = 0,
            cpu_max: str = "max 100000", oom_kill: int = 0) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text("cpu memory\n")
    (root / "memory.max").write_text(f"{memory_max}\n")
    (root / "memory.current").write_text(f"{current}\n")
    (root / "memory.stat").write_text(f"anon {current - file_cache}\nfile {file_cache}\n")
    (root / "cpu.max").write_text(f"{cpu_max}\n")
    (root / "memory.events").write_text(f"low 0\nhigh 0\nmax 3\noom 1\noom_kill {oom_kill}\n")
    return root


def v1_tree(root: Path, *, limit: int = 9223372036854771712, usage: int = 0, cache: int = 0, quota: int = -1,
            period: int = 100000, oom_kill: int = 0) -> Path:
    memory, cpu = root / "memory", root / "cpu,cpuacct"
    memory.mkdir(parents=True, exist_ok=True)
    cpu.mkdir(parents=True, exist_ok=True)
    (memory / "memory.limit_in_bytes").write_text(f"{limit}\n")
    (memory / "memory.usage_in_bytes").write_text(f"{usage}\n")
    (memory / "memory.stat").write_text(f"cache {cache}\nrss 1\ntotal_cache {cache}\n")
    (memory / "memory.oom_control").write_text(f"oom_kill_disable 0\nunder_oom 0\noom_kill {oom_kill}\n")
    (cpu / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    (cpu / "cpu.cfs_period_us").write_text(f"{period}\n")
    return root


@pytest.fixture
def many_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 16-CPU host with plenty of free memory, whatever machine runs the tests."""
    monkeypatch.setattr(cgroup, "usable_cpus", lambda: 16)
    monkeypatch.setattr(cgroup, "host_memory_available", lambda: 120 * GIB)


@pytest.mark.usefixtures("many_cpus")
@pytest.mark.parametrize("make", [v1_tree, v2_tree])
def test_no_limits_means_one_job_per_cpu(tmp_path: Path, make: object) -> None:
    root = make(tmp_path)  # type: ignore[operator]
    assert parallelism.budget({"PUDEV_CGROUP_ROOT": str(root)}).max_jobs == 16


@pytest.mark.usefixtures("many_cpus")
@pytest.mark.parametrize(("limit_gib", "in_use_gib", "jobs"), [(3, 0, 1), (8, 0, 2), (14, 2, 3), (64, 0, 16),
                                                                (1, 0, 1), (8, 5, 1)])
def test_memory_limit_caps_jobs_at_the_measured_figure_per_job(tmp_path: Path, limit_gib: int, in_use_gib: int,
                                                               jobs: int) -> None:
    for root in (v1_tree(tmp_path / "v1", limit=limit_gib * GIB, usage=in_use_gib * GIB + GIB, cache=GIB),
                 v2_tree(tmp_path / "v2", memory_max=str(limit_gib * GIB), current=in_use_gib * GIB + GIB,
                         file_cache=GIB)):
        budget = parallelism.budget({"PUDEV_CGROUP_ROOT": str(root)})
        free = (limit_gib - in_use_gib) * GIB - parallelism.FRONT_END_BYTES
        assert budget.max_jobs == jobs == max(1, min(16, free // parallelism.JOB_BYTES))
        assert budget.memory_source == "cgroup limit"


@pytest.mark.usefixtures("many_cpus")
def test_a_cpu_quota_caps_jobs_like_docker_run_cpus(tmp_path: Path) -> None:
    assert parallelism.budget({"PUDEV_CGROUP_ROOT": str(v2_tree(tmp_path / "a", cpu_max="250000 100000"))}).cpus == 3
    assert parallelism.budget({"PUDEV_CGROUP_ROOT": str(v1_tree(tmp_path / "b", quota=150000))}).max_jobs == 2


@pytest.mark.usefixtures("many_cpus")
def test_max_jobs_is_set_unless_the_user_chose_one(tmp_path: Path) -> None:
    root = str(v1_tree(tmp_path, limit=8 * GIB))
    env = {"PUDEV_CGROUP_ROOT": root}
    parallelism.apply(env)
    assert env["MAX_JOBS"] == env["CMAKE_BUILD_PARALLEL_LEVEL"] == "2"
    # A child process in a container whose memory is now in use derives it again.
    (tmp_path / "memory" / "memory.usage_in_bytes").write_text(f"{5 * GIB}\n")
    parallelism.apply(env)
    assert env["MAX_JOBS"] == "1"
    users = {"PUDEV_CGROUP_ROOT": root, "MAX_JOBS": "12", "CMAKE_BUILD_PARALLEL_LEVEL": "7"}
    parallelism.apply(users)
    assert users["MAX_JOBS"] == "12" and users["CMAKE_BUILD_PARALLEL_LEVEL"] == "7"


def test_nvcc_flags_from_the_environment_move_onto_the_command_line() -> None:
    env = {"NVCC_PREPEND_FLAGS": "-ccbin g++-11", "NVCC_APPEND_FLAGS": "-gencode arch=compute_90,code=sm_90",
           "MAX_JOBS": "3"}
    args = launcher.nvcc_arguments(["-c", "k.cu", "-o", "k.o"], env)
    assert args == ["-ccbin", "g++-11", "-c", "k.cu", "-o", "k.o", "-gencode", "arch=compute_90,code=sm_90"]
    assert "NVCC_PREPEND_FLAGS" not in env and "NVCC_APPEND_FLAGS" not in env  # ccache now hashes them


@pytest.mark.usefixtures("many_cpus")
@pytest.mark.parametrize(("flags", "expected"), [(["--threads", "4"], ["--threads", "1"]),
                                                 (["--threads=8"], ["--threads=1"]), (["-t", "0"], ["-t", "1"]),
                                                 (["--threads", "1"], ["--threads", "1"])])
def test_a_packages_own_nvcc_threads_are_capped_to_the_memory(tmp_path: Path, flags: list[str],
                                                              expected: list[str]) -> None:
    root = str(v1_tree(tmp_path, limit=3 * GIB))
    env = {"PUDEV_CGROUP_ROOT": root}
    parallelism.apply(env)  # MAX_JOBS=1, with room for one device compilation
    assert launcher.nvcc_arguments(["-c", "k.cu", *flags], dict(env)) == ["-c", "k.cu", *expected]


def two_cpus(monkeypatch: pytest.MonkeyPatch, free_gib: float) -> dict[str, str]:
    """The filed machine: 2 CPUs, no memory cap, `free_gib` of the host's memory available; MAX_JOBS derived."""
    monkeypatch.setattr(cgroup, "usable_cpus", lambda: 2)
    monkeypatch.setattr(cgroup, "host_memory_available", lambda: int(free_gib * GIB))
    env = {"PUDEV_CGROUP_ROOT": "/nonexistent"}
    parallelism.apply(env)
    return env


FOUR_TARGETS = [arg for arch in (75, 80, 86, 90) for arg in ("-gencode", f"arch=compute_{arch},code=sm_{arch}")]


def test_cpus_never_lower_a_packages_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """2 CPUs and MAX_JOBS=2 keep `--threads 4` (issue 26: it was cut to CPUs / jobs = 1) while 2 x 4 device
    compilations fit: 8 x 3.5 GiB + the front end's 0.5 GiB."""
    env = two_cpus(monkeypatch, 28.5)
    assert env["MAX_JOBS"] == "2"
    assert launcher.nvcc_arguments(["-c", "k.cu", "--threads", "4", *FOUR_TARGETS], dict(env))[2:4] == ["--threads",
                                                                                                        "4"]


def test_threads_drop_only_to_what_the_memory_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """22 GiB hold 6 device compilations: 3 threads for each of the 2 jobs, and for 4 targets the same 2 rounds
    in 2 + 2 (3 then 1 alone would idle a CPU); 8 targets run as 3 + 3 + 2."""
    env = two_cpus(monkeypatch, 22)
    assert env["MAX_JOBS"] == "2"
    assert launcher.nvcc_arguments(["-c", "k.cu", "--threads", "4"], dict(env))[-1] == "3"
    assert launcher.nvcc_arguments(["-c", "k.cu", "--threads", "4", *FOUR_TARGETS], dict(env))[3] == "2"
    eight = [*FOUR_TARGETS, *(f"--generate-code=arch=compute_{a},code=sm_{a}" for a in (52, 60, 70, 89))]
    assert launcher.target_count(eight) == 8
    assert launcher.nvcc_arguments(["-c", "k.cu", "-t", "4", *eight], dict(env))[3] == "3"


@pytest.mark.usefixtures("many_cpus")
def test_a_memory_cap_lowers_threads_to_one_at_least(tmp_path: Path) -> None:
    env = {"PUDEV_CGROUP_ROOT": str(v2_tree(tmp_path, memory_max=str(4 * GIB)))}
    parallelism.apply(env)  # 4 GiB: one job, one device compilation beside the front end
    assert env["MAX_JOBS"] == "1"
    assert launcher.nvcc_arguments(["-c", "k.cu", "--threads", "4", *FOUR_TARGETS], dict(env))[3] == "1"
    tiny = {"PUDEV_CGROUP_ROOT": str(v2_tree(tmp_path / "tiny", memory_max=str(GIB)))}
    parallelism.apply(tiny)  # not even one fits: one compile is still tried (the OOM line says why it died)
    assert launcher.nvcc_arguments(["-c", "k.cu", "--threads=2"], dict(tiny))[-1] == "--threads=1"


def test_threads_zero_means_the_cpus_the_memory_allows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env = two_cpus(monkeypatch, 64)  # room for 18: one per CPU, counted the container's way
    assert launcher.nvcc_arguments(["-c", "k.cu", "--threads", "0"], dict(env))[-1] == "2"
    monkeypatch.setattr(cgroup, "usable_cpus", lambda: 16)
    capped = {"PUDEV_CGROUP_ROOT": str(v1_tree(tmp_path, limit=15 * GIB))}
    parallelism.apply(capped)  # 15 GiB: 4 jobs, 4 device compilations in all
    assert capped["MAX_JOBS"] == "4"
    assert launcher.nvcc_arguments(["-c", "k.cu", "-t", "0"], dict(capped))[-1] == "1"
    assert parallelism.Budget(16, None, "unknown", "").nvcc_threads(4, 0) == 16


def test_unknown_memory_keeps_a_packages_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cgroup, "usable_cpus", lambda: 2)
    monkeypatch.setattr(cgroup, "host_memory_available", lambda: None)
    env = {"PUDEV_CGROUP_ROOT": "/nonexistent"}
    parallelism.apply(env)
    assert env["MAX_JOBS"] == "2" and env[parallelism.DERIVED_SLOTS] == ""
    assert launcher.nvcc_arguments(["-c", "k.cu", "--threads", "8"], dict(env))[-1] == "8"


def test_threads_follow_the_memory_max_jobs_was_derived_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mid-build the other jobs' compiles hold memory: counted again per job, they would cut this one's threads."""
    env = two_cpus(monkeypatch, 28.5)
    monkeypatch.setattr(cgroup, "host_memory_available", lambda: 12 * GIB)  # the other job's 4 compilations
    assert launcher.nvcc_arguments(["-c", "k.cu", "--threads", "4"], dict(env))[-1] == "4"


@pytest.mark.usefixtures("many_cpus")
def test_threads_the_user_chose_are_left_alone(tmp_path: Path) -> None:
    root = str(v1_tree(tmp_path, limit=3 * GIB))
    derived = {"PUDEV_CGROUP_ROOT": root}
    parallelism.apply(derived)
    own_flag = {**derived, "NVCC_APPEND_FLAGS": "--threads 4"}
    assert launcher.nvcc_arguments(["-c", "k.cu"], own_flag)[-2:] == ["--threads", "4"]
    own_jobs = {"PUDEV_CGROUP_ROOT": root, "MAX_JOBS": "2"}
    assert launcher.nvcc_arguments(["-c", "k.cu", "--threads", "4"], own_jobs)[-2:] == ["--threads", "4"]
    ninja_default = {"PUDEV_CGROUP_ROOT": root, parallelism.OPT_OUT: "1"}
    parallelism.apply(ninja_default)
    assert "MAX_JOBS" not in ninja_default
    assert launcher.nvcc_arguments(["-c", "k.cu", "--threads", "4"], ninja_default)[-2:] == ["--threads", "4"]


def test_the_compile_log_says_which_threads_nvcc_ran_with(tmp_path: Path) -> None:
    log = tmp_path / "compiles.jsonl"
    launcher._log_compile(str(log), "/usr/local/cuda/bin/nvcc", ["-c", "k.cu", "--threads", "2"], 0, 1.5)
    launcher._log_compile(str(log), "/usr/bin/g++", ["-c", "a.cpp"], 0, 1.0)
    first, second = (json.loads(line) for line in log.read_text().splitlines())
    assert (first["source"], first["threads"]) == ("k.cu", 2) and "threads" not in second


def test_the_masquerade_names_their_real_compiler_and_the_launcher_takes_one(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "usr-bin"
    real.mkdir()
    (real / "g++").write_text("#!/bin/sh\n")
    (real / "g++").chmod(0o755)
    monkeypatch.setattr(masquerade, "MASQUERADE", str(tmp_path / "masq"))
    env = {"PATH": f"{tmp_path / 'masq'}:{real}", "CUDA_HOME": "/usr/local/cuda-12.4"}
    assert launcher.split_command([str(tmp_path / "masq" / "g++"), "-c", "a.cpp"], env) == (str(real / "g++"),
                                                                                          ["-c", "a.cpp"])
    assert launcher.split_command(["/opt/pudev/compilers/nvcc", "-c", "k.cu"], env) == (
        "/usr/local/cuda-12.4/bin/nvcc", ["-c", "k.cu"])
    assert launcher.split_command(["pudev-compile", "/usr/local/cuda-13.2/bin/nvcc", "-c", "k.cu"], env) == (
        "/usr/local/cuda-13.2/bin/nvcc", ["-c", "k.cu"])
    with pytest.raises(launcher.LaunchError, match="no clang"):
        launcher.split_command([str(tmp_path / "masq" / "clang")], env)


def test_an_unwritable_cache_compiles_uncached(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir(mode=0o555)
    writable = {"CCACHE_DIR": str(tmp_path / "rw" / "ccache")}
    assert launcher.cache_writable(writable)  # ccache makes it
    if os.getuid() != 0:  # root may write anywhere
        assert not launcher.cache_writable({"CCACHE_DIR": str(tmp_path / "ro" / "ccache")})


def test_the_oom_line_names_the_limit_and_what_ran(tmp_path: Path) -> None:
    env = {"PUDEV_CGROUP_ROOT": str(v1_tree(tmp_path, limit=3 * GIB)), "MAX_JOBS": "2",
           parallelism.DERIVED_MARK: "2"}
    line = oom.message("a compiler", env)
    assert "\n" not in line
    assert line.startswith("pudev: a compiler was killed for lack of memory: this container may use 3.0 GiB "
                           "(cgroup v1 memory limit), MAX_JOBS=2 (derived by pudev)")
    assert "MAX_JOBS=1" in line and "docker run --memory" in line


def test_a_build_front_end_reports_oom_kills_at_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    root = v2_tree(tmp_path, memory_max=str(3 * GIB), oom_kill=4)
    registered: list[Callable[[], None]] = []
    monkeypatch.setattr("atexit.register", registered.append)
    env = {"PUDEV_CGROUP_ROOT": str(root)}
    oom.watch(env, ["/usr/bin/python3", "train.py"])
    assert not registered, "not a build: no watch"
    oom.watch(env, ["-m", "install", "flash-attn"])
    assert len(registered) == 1 and env[oom.WATCH_MARK] == "1"
    oom.watch(env, ["/usr/local/bin/pip", "install", "x"])
    assert len(registered) == 1, "a child front end leaves it to the outermost"
    registered[0]()
    assert capsys.readouterr().err == ""
    (root / "memory.events").write_text("oom_kill 6\n")
    registered[0]()
    assert capsys.readouterr().err.startswith("pudev: 2 processes (compilers, most likely) were killed for lack")


def test_the_oom_line_says_when_ninja_chose_the_jobs(tmp_path: Path) -> None:
    line = oom.message("nvcc compiling attention_cuda_bwd.cu", {"PUDEV_CGROUP_ROOT": str(v2_tree(
        tmp_path, memory_max=str(3 * GIB)))})
    assert line.startswith("pudev: nvcc compiling attention_cuda_bwd.cu was killed for lack of memory: this "
                           "container may use 3.0 GiB (cgroup v2 memory limit), MAX_JOBS unset (ninja runs one job "
                           "per CPU + 2); build with fewer jobs")


@pytest.mark.parametrize(("before", "after"), [("0", "500"), ("-200", "500"), ("800", "800"), ("1000", "1000")])
def test_the_compiler_becomes_the_oom_killers_first_choice_and_is_never_made_safer(tmp_path: Path, before: str,
                                                                                  after: str) -> None:
    score = tmp_path / "oom_score_adj"
    score.write_text(before + "\n")
    launcher.prefer_compilers_for_oom(str(score))
    assert score.read_text().strip() == after


def test_a_proc_that_refuses_the_score_leaves_the_compile_alone(tmp_path: Path) -> None:
    launcher.prefer_compilers_for_oom(str(tmp_path / "missing"))  # no error: the kernel's own choice stands
    assert not (tmp_path / "missing").exists()
