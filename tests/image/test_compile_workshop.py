"""The compile workshop (docs/using/extensions.md): extensions compile through the compiler cache by
every route (setup.py, torch's JIT load(), nvcc as CMake's launcher), never share entries across
toolkits, run as many jobs as the container's cgroup allows, and go into a wheelhouse that pip
finds by default and that refuses a wheel built for another torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cuda_extension import TEST_ARCH, setup_py_build

from pudev.image.compilers.compile_status import parse_stats
from pudev.image.cudaswitch import environment_for
from pudev.image.record import ImageRecord
from pudev.image.wheels import marker, repack

GIB = 1024**3
CCACHE = "/usr/local/bin/ccache"
# A Python module in plain C API plus a CUDA file: load() compiles it with all of torch's flags in
# seconds, where anything including torch/extension.h takes most of a minute on a small machine.
MODULE_CPP = r"""
#include <Python.h>
extern "C" int pudev_cuda_add(int a, int b);
static PyObject* add(PyObject*, PyObject* args) {
    int a, b;
    if (!PyArg_ParseTuple(args, "ii", &a, &b)) return nullptr;
    return PyLong_FromLong(pudev_cuda_add(a, b));
}
static PyMethodDef methods[] = {{"add", add, METH_VARARGS, ""}, {nullptr, nullptr, 0, nullptr}};
#define PUDEV_CAT2(a, b) a##b
#define PUDEV_CAT(a, b) PUDEV_CAT2(a, b)
#define PUDEV_STR2(x) #x
#define PUDEV_STR(x) PUDEV_STR2(x)
static PyModuleDef definition = {PyModuleDef_HEAD_INIT, PUDEV_STR(TORCH_EXTENSION_NAME), nullptr, -1, methods};
PyMODINIT_FUNC PUDEV_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&definition); }
"""
KERNEL_CU = r"""
__global__ void pudev_noop() {}
extern "C" int pudev_cuda_add(int a, int b) { return a + b; }
"""
JIT_BUILD = """
import sys
from torch.utils.cpp_extension import load
module = load("pudev_jit_probe", [sys.argv[1] + "/src/module.cpp", sys.argv[1] + "/src/kernel.cu"],
              build_directory=sys.argv[1] + "/build")
print(module.add(2, 3))
"""
SETUP_PY = """
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
setup(name="pudev-fastop", version="1.0", packages=[],
      ext_modules=[CUDAExtension("pudev_fastop", ["module.cpp", "kernel.cu"])], cmdclass={"build_ext": BuildExtension})
"""


def stats(env: dict[str, str]) -> dict[str, int]:
    numbers = parse_stats(subprocess.run([CCACHE, "--print-stats"], env=env, capture_output=True, text=True,
                                         check=True).stdout)
    return {"hits": numbers["direct_cache_hit"] + numbers["preprocessed_cache_hit"], "misses": numbers["cache_miss"]}


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {key: after[key] - before[key] for key in before}


@pytest.fixture
def cache_env(tmp_path: Path) -> dict[str, str]:
    """The image's environment with a cache of this test's own (the image's settings otherwise)."""
    return {**os.environ, "CCACHE_DIR": str(tmp_path / "ccache"), "TORCH_CUDA_ARCH_LIST": TEST_ARCH}


def probe_sources(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "build").mkdir()  # load() expects its build directory to exist
    (root / "src" / "module.cpp").write_text(MODULE_CPP)
    (root / "src" / "kernel.cu").write_text(KERNEL_CU)
    return root


@pytest.mark.platform
@pytest.mark.anyuser
def test_the_image_routes_every_compiler_through_the_cache() -> None:
    assert os.access(CCACHE, os.X_OK)
    assert shutil.which("g++") == "/opt/pudev/compilers/bin/g++" and shutil.which("cc") == "/opt/pudev/compilers/bin/cc"
    assert os.environ["PYTORCH_NVCC"] == "/opt/pudev/compilers/nvcc"
    assert os.environ["CMAKE_CUDA_COMPILER_LAUNCHER"] == "/opt/pudev/compilers/pudev-compile"
    assert os.environ["TORCH_NO_COMPILER_WRAPPER"] == "1"  # torch 2.6+ would put ccache in front a second time
    cache = Path(os.environ["CCACHE_DIR"])
    assert cache.is_dir() and os.access(cache, os.W_OK | os.X_OK), f"{cache} must be writable by uid {os.getuid()}"
    version = subprocess.run([CCACHE, "--version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("ccache version 4.")


def test_a_second_setup_py_build_in_a_new_directory_comes_from_the_cache(built_extension: Path,
                                                                         extension_cache: dict[str, str],
                                                                         tmp_path: Path) -> None:
    """The first, cold build is the session's one (`built_extension`, which test_extension.py imports and runs),
    made with a cache of its own: one cold compile of torch's headers per session, not two."""
    assert sorted(built_extension.glob("pudev_test_extension*.so")), "the session's build produced no module"
    cold = stats(extension_cache)
    assert cold == {"hits": 0, "misses": 2}, cold  # binding.cpp and kernel.cu
    second = setup_py_build(tmp_path, extension_cache)
    assert second.returncode == 0, second.stderr[-3000:]
    assert delta(cold, stats(extension_cache)) == {"hits": 2, "misses": 0}
    built = sorted(tmp_path.glob("pudev_test_extension*.so"))
    assert built, "the cached build must still produce the module"


def test_torch_jit_load_compiles_through_the_cache(cache_env: dict[str, str], tmp_path: Path) -> None:
    outputs = []
    for name in ("one", "two"):
        root = probe_sources(tmp_path / name)
        before = stats(cache_env)
        run = subprocess.run([sys.executable, "-c", JIT_BUILD, str(root)], env=cache_env, capture_output=True,
                             text=True, timeout=900, check=False)
        assert run.returncode == 0, run.stderr[-3000:]
        outputs.append((run.stdout.strip().splitlines()[-1], delta(before, stats(cache_env))))
    assert outputs == [("5", {"hits": 0, "misses": 2}), ("5", {"hits": 2, "misses": 0})]


CMAKE_LISTS = """
cmake_minimum_required(VERSION 3.18)
project(probe LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES 80)
add_library(probe SHARED src/host.cpp src/kernel.cu)
"""


def test_cmake_builds_compile_through_the_cache(cache_env: dict[str, str], tmp_path: Path) -> None:
    """C and C++ through the compilers on PATH, CUDA through CMAKE_CUDA_COMPILER_LAUNCHER: a second
    configure-and-build in another directory compiles nothing (CMake's own compiler checks included)."""
    results = []
    for name in ("one", "two"):
        root = probe_sources(tmp_path / name)
        (root / "src" / "host.cpp").write_text("int pudev_host_add(int a, int b) { return a + b; }\n")
        (root / "CMakeLists.txt").write_text(CMAKE_LISTS)
        before = stats(cache_env)
        for step in (["cmake", "-S", str(root), "-B", str(root / "build"), "-G", "Ninja"],
                     ["cmake", "--build", str(root / "build")]):
            run = subprocess.run(step, env=cache_env, capture_output=True, text=True, timeout=900, check=False)
            assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        results.append(delta(before, stats(cache_env)))
    first, second = results
    assert first["misses"] >= 2 and first["hits"] == 0, first
    assert second == {"hits": first["misses"], "misses": 0}, results


def test_the_cache_never_hands_one_toolkits_object_to_another(record: ImageRecord, cache_env: dict[str, str],
                                                              tmp_path: Path) -> None:
    source = tmp_path / "kernel.cu"
    source.write_text(KERNEL_CU)
    objects: dict[str, bytes] = {}
    for toolkit in record.toolkits:
        env = dict(cache_env)  # as `cuda-switch VERSION` leaves the shell
        for name, value in environment_for(record, toolkit, cache_env).items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        for attempt in ("cold", "again"):
            before = stats(env)
            target = tmp_path / f"{toolkit.version}-{attempt}.o"
            subprocess.run(["/opt/pudev/compilers/nvcc", "-arch=sm_80", "-c", str(source), "-o", str(target)],
                           env=env, check=True, capture_output=True, text=True, timeout=600)
            # The same toolkit again is a hit (the cache works); another toolkit is a miss.
            assert delta(before, stats(env)) == ({"hits": 0, "misses": 1} if attempt == "cold"
                                                 else {"hits": 1, "misses": 0}), (toolkit.version, attempt)
            objects[f"{toolkit.version}-{attempt}"] = target.read_bytes()
    first, second = (toolkit.version for toolkit in record.toolkits)
    assert objects[f"{first}-cold"] == objects[f"{first}-again"]
    assert objects[f"{first}-cold"] != objects[f"{second}-cold"]


def fake_cgroup(root: Path, *, memory: int, cpus: int) -> Path:
    root.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory\n")
    (root / "memory.max").write_text(f"{memory}\n")
    (root / "memory.current").write_text("0\n")
    (root / "memory.stat").write_text("file 0\n")
    (root / "cpu.max").write_text(f"{cpus * 100000} 100000\n")
    (root / "memory.events").write_text("oom_kill 0\n")
    return root


@pytest.mark.anyuser
@pytest.mark.parametrize(("memory_gib", "cpus", "jobs"), [(8, 8, 2), (3, 8, 1), (64, 3, 3)])
def test_every_python_derives_max_jobs_from_the_cgroup(tmp_path: Path, memory_gib: int, cpus: int,
                                                       jobs: int) -> None:
    root = fake_cgroup(tmp_path / "cgroup", memory=memory_gib * GIB, cpus=cpus)
    env = {k: v for k, v in os.environ.items() if k not in ("MAX_JOBS", "PUDEV_DERIVED_MAX_JOBS")}
    shown = subprocess.run([sys.executable, "-c", "import os; print(os.environ['MAX_JOBS'])"], capture_output=True,
                           text=True, check=True, env={**env, "PUDEV_CGROUP_ROOT": str(root)}).stdout.strip()
    expected = min(jobs, len(os.sched_getaffinity(0)))
    assert shown == str(expected)
    own = subprocess.run([sys.executable, "-c", "import os; print(os.environ['MAX_JOBS'])"], capture_output=True,
                         text=True, check=True, env={**env, "PUDEV_CGROUP_ROOT": str(root), "MAX_JOBS": "7"})
    assert own.stdout.strip() == "7"


def test_the_real_cgroup_is_read() -> None:
    """In this container (no limits set by `pudev test`): one job per CPU, or fewer if the host is short."""
    verify = subprocess.run(["pudev", "verify", "--json", "--cpu"], capture_output=True, text=True, check=False)
    facts = json.loads(verify.stdout)["facts"]["compile"]
    assert facts["ccache_version"].startswith("4.") and facts["cache_dir"] == os.environ["CCACHE_DIR"]
    assert facts["jobs_derived"] and 1 <= int(facts["max_jobs"]) <= len(os.sched_getaffinity(0))
    assert facts["cgroup_version"] in ("v1", "v2")


def test_pudev_wheel_marks_the_wheel_and_pip_finds_it_and_refuses_a_foreign_one(tmp_path: Path) -> None:
    package = probe_sources(tmp_path / "fastop") / "src"
    (package / "setup.py").write_text(SETUP_PY)
    house = tmp_path / "wheels"
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": TEST_ARCH, "CCACHE_DIR": str(tmp_path / "ccache"),
           "PUDEV_WHEELHOUSE": str(house), "PIP_FIND_LINKS": str(house)}
    built = subprocess.run(["pudev", "wheel", str(package)], env=env, capture_output=True, text=True, timeout=900,
                           check=False)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    (wheel,) = house.glob("pudev_fastop-*.whl")
    here = marker.this_image()
    assert here is not None and wheel.name.startswith(f"pudev_fastop-1.0+{here.label}-")
    against = marker.read(str(wheel))
    assert against is not None and not against.mismatch(here) and against.arch_list == TEST_ARCH
    # pip finds it in the wheelhouse with no index at all, and installs it in seconds.
    target = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--target",
                                str(target), "pudev-fastop"], env=env, capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr[-2000:]
    check = subprocess.run([sys.executable, "-c", "import torch, pudev_fastop; print(pudev_fastop.add(20, 22))"],
                           env={**env, "PYTHONPATH": str(target)}, capture_output=True, text=True, check=False)
    assert check.stdout.strip() == "42", check.stderr[-2000:]
    # The same wheel as if built for another torch: refused at install, in one line.
    other = marker.BuiltAgainst(torch="1.0.0", cuda="10.2", python=here.python)
    foreign_dir = tmp_path / "foreign"
    foreign_dir.mkdir()
    plain = foreign_dir / wheel.name.replace(f"+{here.label}", "")
    shutil.copy(wheel, plain)
    foreign = repack.mark(plain, other, foreign_dir)
    refused = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(tmp_path / "x"),
                              str(foreign)], env=env, capture_output=True, text=True, check=False)
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert f"was built against torch 1.0.0 (this image: {here.torch})" in refused.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.platform
@pytest.mark.anyuser
def test_pip_and_uv_look_in_the_wheelhouse_by_default() -> None:
    house = os.environ["PUDEV_WHEELHOUSE"]
    assert os.environ["PIP_FIND_LINKS"] == os.environ["UV_FIND_LINKS"] == house
    assert os.path.isdir(house) and os.access(house, os.W_OK | os.X_OK), f"{house} must be writable by any uid"
