"""`pudev pick` on hosts it cannot touch here: a fake NVML (the pynvml module it reads through) and a fake
`nvidia-smi` on PATH, with the strings real drivers print; the decision on matrices each test writes (it must
hold for any matrix), and on today's matrix only where it is checked against the docs' tag table; what would
break a first `docker run --gpus`, in the words of docs/troubleshooting.md."""

from __future__ import annotations

import json
import os
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from cli_support import fails
from matrices import WriteMatrix, synthetic

from pudev.cli import main
from pudev.common.cuda_drivers import driver_at_least, driver_floors
from pudev.common.generated import block, markers
from pudev.common.gpu_arch import capability_of
from pudev.config.loader import load_matrix
from pudev.config.model import Matrix
from pudev.config.variant_table import runs_on
from pudev.host import first_run, gpus, pick
from pudev.host.first_run import Finding
from pudev.host.fit import choose, judge
from pudev.host.gpus import Gpu, HostGpus, read_gpus
from pudev.paths import REPO_ROOT, VARIANTS_FILE

AMD64, ARM64 = "linux/amd64", "linux/arm64"
# (name as NVML and nvidia-smi print it, compute capability, platform of the hosts it sits in)
REAL_GPUS = [
    ("NVIDIA GeForce RTX 4090", "8.9", AMD64), ("NVIDIA GeForce RTX 5090", "12.0", AMD64),
    ("NVIDIA GeForce RTX 3060", "8.6", AMD64), ("Tesla V100-SXM2-32GB", "7.0", AMD64), ("Tesla T4", "7.5", AMD64),
    ("NVIDIA A100-SXM4-80GB", "8.0", AMD64), ("NVIDIA H100 80GB HBM3", "9.0", AMD64), ("NVIDIA H200", "9.0", AMD64),
    ("NVIDIA B200", "10.0", AMD64), ("NVIDIA GH200 480GB", "9.0", ARM64),
]
# Drivers as they print themselves: R470 to R595, the branches hosts run.
REAL_DRIVERS = ["470.256.02", "525.60.13", "535.183.01", "550.120", "560.35.03", "575.57.08", "580.65.06",
                "580.82.07", "595.45.04"]
NO_ANSWER = HostGpus(problem="no NVIDIA GPU or driver found (test)")
CHECKS = [Finding("docker", "ok", "engine 28.1.1")]  # the engine is not what these tests judge


def fake_nvml(driver: str, devices: list[tuple[str, str]], *, fails_with: str = "") -> types.ModuleType:
    """A module with NVML's calls pudev.host.gpus makes, answering for these devices."""
    module = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    def init() -> None:
        if fails_with:
            raise NVMLError(fails_with)

    def capability(index: int) -> tuple[int, int]:
        return capability_of(devices[index][1])

    module.__dict__.update(
        NVMLError=NVMLError, nvmlInit=init, nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=driver.encode,  # older bindings give bytes
        nvmlDeviceGetCount=lambda: len(devices), nvmlDeviceGetHandleByIndex=lambda index: index,
        nvmlDeviceGetName=lambda index: devices[index][0], nvmlDeviceGetCudaComputeCapability=capability)
    return module


@pytest.fixture
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError


@pytest.fixture
def smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Writes a fake `nvidia-smi` (its output and exit status) onto a PATH with no other."""
    folder = tmp_path / "smi-bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")

    def write(output: str, status: int = 0, *, old: bool = False) -> Path:
        script = folder / "nvidia-smi"
        refuse = ('case "$*" in *compute_cap*) echo \'Field "compute_cap" is not a valid field to query.\'; '
                  'exit 2;; esac\n') if old else ""
        script.write_text(f"#!/bin/sh\n{refuse}cat <<'END'\n{output}\nEND\nexit {status}\n")
        script.chmod(0o755)
        return script

    return write


@pytest.mark.parametrize(("name", "capability", "platform"), REAL_GPUS)
def test_nvml_reads_each_real_gpu(name: str, capability: str, platform: str,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml("580.82.07", [(name, capability)] * 2))
    host = read_gpus()
    assert (host.driver, host.source, host.problem) == ("580.82.07", "NVML", "")
    assert host.gpus == (Gpu(0, name, capability), Gpu(1, name, capability))


@pytest.mark.parametrize(("name", "capability", "platform"), REAL_GPUS)
def test_nvidia_smi_reads_each_real_gpu_where_nvml_is_missing(name: str, capability: str, platform: str,
                                                               no_nvml: None, smi: Any) -> None:
    smi(f"{name}, {capability}, 550.120\n{name}, {capability}, 550.120")
    host = read_gpus()
    assert (host.driver, host.source) == ("550.120", "nvidia-smi")
    assert host.gpus == (Gpu(0, name, capability), Gpu(1, name, capability))
    assert "nvidia-ml-py is not installed" in host.notes[0]


def test_an_old_nvidia_smi_without_compute_cap_still_gives_the_driver(no_nvml: None, smi: Any) -> None:
    smi("Tesla V100-SXM2-32GB, 470.256.02", old=True)
    host = read_gpus()
    assert host.driver == "470.256.02" and host.gpus == (Gpu(0, "Tesla V100-SXM2-32GB", ""),)
    assert "compute capability unknown" in host.gpus[0].describe()


def test_a_driver_that_does_not_answer_says_so_with_the_fix(no_nvml: None, smi: Any, tmp_path: Path) -> None:
    smi("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
        "NVIDIA driver is installed and running.", 9)
    bus = tmp_path / "pci"
    (bus / "0000:01:00.0").mkdir(parents=True)
    (bus / "0000:01:00.0" / "vendor").write_text("0x10de\n")
    (bus / "0000:01:00.0" / "class").write_text("0x030000\n")
    host = read_gpus(bus)
    assert not host.gpus and "couldn't communicate with the NVIDIA driver" in host.problem
    assert "PCI bus" in host.problem and "install the NVIDIA driver" in host.fix
    assert "no NVIDIA GPU or driver found" in read_gpus(tmp_path / "no-bus").problem


def test_a_library_module_mismatch_says_reboot(monkeypatch: pytest.MonkeyPatch, smi: Any) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml("", [], fails_with="Driver/library version mismatch"))
    smi("Failed to initialize NVML: Driver/library version mismatch", 18)
    host = read_gpus()
    assert not host.gpus and "reboot the host" in host.fix


def test_no_nvml_and_no_nvidia_smi_is_no_gpu(no_nvml: None, smi: Any) -> None:
    (Path(os.environ["PATH"].split(":")[0]) / "nvidia-smi").unlink(missing_ok=True)
    host = read_gpus(Path("/nonexistent"))
    assert not host.gpus and "no nvidia-smi on PATH" in host.problem


# Matrices the decision is judged on, written here: their shape is what each assertion depends on.
def three_lines() -> dict[str, Any]:
    """An old torch on CUDA 12.1 (Volta and up), a newer one on CUDA 12.9, the newest on CUDA 13.0 (latest)."""
    data = synthetic()
    data["toolkits"]["12.1"] = {"image": "example.com/cuda:12.1-devel", "max_gcc": 12, "min_arch": "5.0",
                                "max_arch": "9.0"}
    data["variants"]["cu121"] = {"torch": "2.0.1", "cuda": "12.1", "base_image": "example.com/torch:2.0.1-cuda12.1",
                                 "toolkits": ["12.1", "12.9"], "cuda_arch_list": "7.0;8.0;9.0+PTX"}
    data["variants"]["cu130"]["torch"] = "3.2.0"
    return data


def _matrix(write: WriteMatrix, data: dict[str, Any]) -> Matrix:
    return load_matrix(write(data))


def _gpu(name: str) -> HostGpus:
    found = next((gpu, capability) for gpu, capability, _ in REAL_GPUS if gpu == name)
    return HostGpus(gpus=(Gpu(0, *found),))


def _on(host: HostGpus, driver: str) -> HostGpus:
    return HostGpus(driver, host.gpus, "NVML")


def test_the_newest_torch_with_full_support_is_taken_and_the_newer_one_is_named(matrix_file: WriteMatrix) -> None:
    matrix = _matrix(matrix_file, three_lines())
    host = _on(_gpu("NVIDIA GeForce RTX 4090"), "550.120")  # CUDA 12.1 fully, 12.9 by compatibility, 13.0 not
    fits = {fit.tag: fit for fit in judge(matrix, AMD64, host)}
    assert (fits["cu130"].runs, fits["cu129"].runs, fits["cu129"].full, fits["cu121"].full) == (False, True, False,
                                                                                                 True)
    assert "below 580.65.06, the oldest that runs CUDA 13.0" in fits["cu130"].why[0]
    assert "below full support for CUDA 12.9" in fits["cu129"].why[0]
    choice = choose(matrix, list(fits.values()), host)
    assert choice.tag == "cu121" and "fully support" in choice.why and "cu129 (torch 3.1.0) also runs" in choice.why
    assert "update the host's NVIDIA driver to 580.65.06 or newer for cu130" in choice.why


def test_a_gpu_outside_every_arch_range_gets_no_tag_and_the_driver_that_would_help(matrix_file: WriteMatrix) -> None:
    data = three_lines()
    data["variants"]["cu129"]["cuda_arch_list"] = "8.0;9.0+PTX"  # CUDA 12 ends at Hopper here
    matrix = _matrix(matrix_file, data)
    host = _on(_gpu("NVIDIA GeForce RTX 5090"), "575.57.08")  # Blackwell: CUDA 13 only, whose driver it lacks
    fits = {fit.tag: fit for fit in judge(matrix, AMD64, host)}
    assert "sm_120 (Blackwell), outside what torch 2.0.1" in fits["cu121"].why[0]
    assert "no kernel image is available" in fits["cu121"].why[0]
    choice = choose(matrix, list(fits.values()), host)
    assert choice.tag == "" and "update the host's NVIDIA driver to 580.65.06 or newer for cu130" in choice.why


def test_volta_keeps_to_cuda_12_whatever_the_driver(matrix_file: WriteMatrix) -> None:
    matrix = _matrix(matrix_file, three_lines())
    host = _on(_gpu("Tesla V100-SXM2-32GB"), "595.45.04")
    fits = {fit.tag: fit for fit in judge(matrix, AMD64, host)}
    assert not fits["cu130"].runs and "sm_70 (Volta)" in fits["cu130"].why[0]
    # torch's own CUDA 12 builds start at Maxwell, whatever the image's arch list for extensions says
    assert fits["cu129"].full and choose(matrix, list(fits.values()), host).tag == "cu129"


def test_the_platform_rules_out_what_is_not_built_for_it(matrix_file: WriteMatrix) -> None:
    data = three_lines()
    for toolkit in data["toolkits"].values():
        toolkit["platforms"] = [AMD64, ARM64]
    data["variants"]["cu130"]["platforms"] = [AMD64, ARM64]
    matrix = _matrix(matrix_file, data)
    host = _on(_gpu("NVIDIA GH200 480GB"), "580.82.07")
    fits = {fit.tag: fit for fit in judge(matrix, ARM64, host)}
    assert fits["cu121"].why == ("built for amd64 only; this host is arm64",)
    assert choose(matrix, list(fits.values()), host).tag == "cu130"


def test_without_a_gpu_every_tag_runs_on_the_cpu_and_latest_is_taken(matrix_file: WriteMatrix) -> None:
    matrix = _matrix(matrix_file, three_lines())
    fits = judge(matrix, AMD64, NO_ANSWER)
    assert all(fit.runs for fit in fits)
    choice = choose(matrix, fits, NO_ANSWER)
    assert choice.tag == matrix.default_variant and "CPU only" in choice.why
    assert "CPU only" in pick.render(pick.answer(matrix, platform=AMD64, host=NO_ANSWER, checks=CHECKS))


def _matrices(write: WriteMatrix) -> list[Matrix]:
    return [load_matrix(VARIANTS_FILE), _matrix(write, synthetic()), _matrix(write, three_lines())]


@pytest.mark.parametrize(("name", "capability", "platform"), REAL_GPUS)
def test_for_any_matrix_a_tag_runs_exactly_where_the_table_rules_say(name: str, capability: str, platform: str,
                                                                    matrix_file: WriteMatrix) -> None:
    """Whatever the matrix: runs = built for the platform, driver at its floor, GPU in its span; the tag taken
    runs, and no tag that runs with full support has a newer torch."""
    for matrix in _matrices(matrix_file):
        for driver in REAL_DRIVERS:
            host = _on(_gpu(name), driver)
            fits = judge(matrix, platform, host)
            for fit in fits:
                built = platform in matrix.builds.get(fit.tag, {fit.variant.platform: fit.variant})
                floor, full = driver_floors(fit.variant.cuda)
                expected = built and driver_at_least(driver, floor) and runs_on(fit.variant, capability)
                assert fit.runs == expected, (fit, driver)
                assert fit.full == (expected and driver_at_least(driver, full))
                assert fit.runs or fit.why
            choice = choose(matrix, fits, host)
            running = [fit for fit in fits if fit.runs]
            assert bool(choice.tag) == bool(running)
            if choice.tag:
                taken = next(fit for fit in fits if fit.tag == choice.tag)
                assert taken.runs
                assert all(fit.variant.torch_release <= taken.variant.torch_release for fit in fits if fit.full)


TAG_ROW = re.compile(r"^\| `(?P<tag>[^`]+)`.*?\| ≥ (?P<floor>[\d.]+)(?: \(full support: ≥ (?P<full>[\d.]+)\))? \|")
SPAN = re.compile(r"\(sm_(\d+) to sm_(\d+)\)")


def _sm(digits: str) -> tuple[int, int]:
    return int(digits[:-1]), int(digits[-1])


def test_todays_matrix_agrees_with_the_docs_tag_table() -> None:
    """What pick says of each real GPU and driver is what the tag table in docs/using/variants.md says."""
    table = block((REPO_ROOT / "docs" / "using" / "variants.md").read_text(), markers("tags"))
    assert table is not None
    rows = {}
    for line in table.splitlines()[2:]:
        found = TAG_ROW.match(line)
        assert found, line
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[found["tag"]] = (found["floor"], found["full"] or found["floor"], cells[5], cells[6])
    matrix = load_matrix(VARIANTS_FILE)
    for name, capability, platform in REAL_GPUS:
        for driver in REAL_DRIVERS:
            for fit in judge(matrix, platform, _on(_gpu(name), driver)):
                floor, full, amd64, arm64 = rows[fit.tag]
                column = amd64 if platform == AMD64 else arm64
                span = SPAN.search(column)
                in_span = span is not None and _sm(span[1]) <= capability_of(capability) and \
                    capability_of(capability)[0] <= _sm(span[2])[0]
                assert fit.runs == (in_span and driver_at_least(driver, floor)), (fit.tag, name, driver)
                assert fit.full == (fit.runs and driver_at_least(driver, full)), (fit.tag, name, driver)


def test_the_command_answers_from_a_fake_nvml_and_any_matrix(matrix_file: WriteMatrix, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml("580.82.07", [("NVIDIA H100 80GB HBM3", "9.0")]))
    monkeypatch.setattr(pick, "native_platform", lambda: AMD64)
    path = matrix_file(three_lines())
    assert main(["pick", "--variants-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA driver 580.82.07 (read through NVML)" in out
    assert "GPU 0: NVIDIA H100 80GB HBM3, sm_90 (Hopper)" in out
    assert "take cu130:" in out and "before the first `docker run --gpus all`:" in out
    assert main(["pick", "--variants-file", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["take"] == "cu130" and document["gpus"][0]["capability"] == "9.0"
    assert {item["tag"] for item in document["tags"]} == {"cu121", "cu129", "cu130"}
    assert main(["pick", "--variants-file", str(path), "--tag"]) == 0
    assert capsys.readouterr().out == "cu130\n"  # what `make build` and `make jupyter` read


def test_no_tag_that_runs_is_one_line_after_the_table(matrix_file: WriteMatrix, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml("470.256.02", [("NVIDIA GeForce RTX 5090", "12.0")]))
    monkeypatch.setattr(pick, "native_platform", lambda: AMD64)
    line = fails(["pick", "--variants-file", str(matrix_file(three_lines()))], capsys)
    assert "no tag of variants.toml runs on this host" in line and "NVIDIA driver" in line
    assert main(["pick", "--variants-file", str(matrix_file(three_lines())), "--tag"]) != 0
    captured = capsys.readouterr()
    assert captured.out == ""  # a script reading the tag gets nothing, and the exit and one line say why
    assert "no tag of variants.toml runs on this host" in captured.err and len(captured.err.splitlines()) == 1


# What would break a first `docker run --gpus`, each in the words of its troubleshooting entry.
TROUBLESHOOTING = (REPO_ROOT / "docs" / "troubleshooting.md").read_text()


def _headings() -> list[str]:
    return [match.strip("`") for match in re.findall(r"^## `([^`]+)`", TROUBLESHOOTING, flags=re.MULTILINE)]


def _quotes_an_entry(finding: Finding) -> bool:
    return any(heading.lower() in finding.message.lower() for heading in _headings())


def test_a_user_outside_the_docker_group_gets_the_entrys_words_and_fix() -> None:
    import grp

    group = grp.struct_group(("docker", "x", 998, ["alice"]))
    outside = first_run.group_finding(euid=1000, user="bob", session_groups=[1000], docker_group=group,
                                      engine_answered=False)
    assert outside.status == "FAIL" and _quotes_an_entry(outside) and 'usermod -aG docker "$USER"' in outside.fix
    joined = first_run.group_finding(euid=1000, user="alice", session_groups=[1000], docker_group=group,
                                     engine_answered=False)
    assert joined.status == "FAIL" and "newgrp docker" in joined.fix
    for ok in (first_run.group_finding(euid=0, user="root", session_groups=[], docker_group=None,
                                       engine_answered=False),
               first_run.group_finding(euid=1000, user="alice", session_groups=[998], docker_group=group,
                                       engine_answered=False),
               first_run.group_finding(euid=1000, user="bob", session_groups=[], docker_group=None,
                                       engine_answered=True)):
        assert ok.status == "ok"


def test_no_nvidia_runtime_and_no_cdi_spec_quotes_the_entry(tmp_path: Path) -> None:
    missing = first_run.runtime_finding(has_runtime=False, specs=first_run.cdi_specs([tmp_path / "none"]))
    assert missing.status == "FAIL" and _quotes_an_entry(missing) and "nvidia-ctk runtime configure" in missing.fix
    (tmp_path / "cdi").mkdir()
    (tmp_path / "cdi" / "nvidia.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n")
    only_cdi = first_run.runtime_finding(has_runtime=False, specs=first_run.cdi_specs([tmp_path / "cdi"]))
    assert only_cdi.status == "WARN" and "--device nvidia.com/gpu=all" in only_cdi.message
    assert first_run.runtime_finding(has_runtime=True, specs=[]).status == "ok"


def test_a_small_dev_shm_warns_with_the_entrys_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    small = os.statvfs_result((4096, 4096, 16384, 0, 0, 0, 0, 0, 0, 255))  # 64 MiB
    monkeypatch.setattr(os, "statvfs", lambda _: small)
    finding = first_run.shm_finding()
    assert finding.status == "WARN" and "64 MiB" in finding.message and "DataLoader workers" in finding.message
    assert "--shm-size=8g" in finding.fix and "--shm-size=8g" in TROUBLESHOOTING


def _client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    from pudev.engine import docker

    client = tmp_path / "docker"
    client.write_text(script)
    client.chmod(0o755)
    monkeypatch.setenv("PUDEV_DOCKER", str(client))
    docker.docker_cli.cache_clear()
    docker.versions.clear()


def test_an_engine_that_refuses_the_user_is_the_docker_group_entry(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _client(tmp_path, monkeypatch, "#!/bin/sh\necho 'permission denied while trying to connect to the docker API at "
                                   "unix:///var/run/docker.sock' >&2\nexit 1\n")
    (found,), answered = first_run.engine_findings()
    assert not answered and found.status == "FAIL" and _quotes_an_entry(found) and "usermod" in found.fix


def test_an_engine_below_the_floor_says_upgrade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _client(tmp_path, monkeypatch, "#!/bin/sh\necho '20.10.24|20.10.24+dfsg1|Engine,containerd,'\n")
    (found,), answered = first_run.engine_findings()
    assert answered and found.status == "FAIL" and "older than 28.0" in found.message
    assert "Docker 28 or newer" in found.fix
    _client(tmp_path, monkeypatch, "#!/bin/sh\necho '28.1.1|28.1.1|Engine,containerd,'\n")
    assert first_run.engine_findings()[0][0].status == "ok"


def test_findings_check_the_runtime_only_where_gpus_are(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "nvidia runtime" not in [item.check for item in first_run.findings(gpus=False)]
    assert "nvidia runtime" in [item.check for item in first_run.findings(gpus=True)]


def test_gpus_module_is_the_one_nvml_is_read_through() -> None:
    """The fake above replaces what gpus.load_nvml imports: the host side never imports pudev.image."""
    assert gpus.load_nvml.__module__ == "pudev.host.gpus"
