"""Any user id, with or without the entrypoint, as clusters start the image (Kubernetes
runAsUser, OpenShift's random uid with gid 0, Slurm/pyxis, a Kubernetes `command:`).

Every test here carries the `anyuser` marker and holds for whatever user runs it: the
normal suite runs it as the image's user, and tests/e2e/test_any_user.py runs it again
(`pudev selftest -- -m anyuser`) as --user 4242:4242, as --user 4242:0 and with
--entrypoint "", where the environment comes from ENV alone.
"""

from __future__ import annotations

import getpass
import os
import select
import shutil
import site
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

from pudev.image.record import ImageRecord
from pudev.mirror.catalogue import MIRRORS
from pudev.mirror.mirror_files import MirrorFiles

pytestmark = pytest.mark.anyuser

# What docker gives a uid without a passwd entry (HOME=/), and no HOME at all.
BROKEN_HOMES = {"HOME=/": {"HOME": "/"}, "no HOME": {}}
SHELLS = {"zsh -c": ["zsh", "-c"], "zsh -i -c": ["zsh", "-i", "-c"], "zsh -l -c": ["zsh", "-l", "-c"],
          "bash -i -c": ["bash", "-i", "-c"], "bash -l -c": ["bash", "-l", "-c"], "sh -l -c": ["sh", "-l", "-c"]}
TOOLS = {"python": ["python", "-c", "import torch; print(torch.__version__)"], "pip": ["pip", "--version"],
         "jupyter": ["jupyter", "lab", "--version"], "cuda-switch": ["cuda-switch", "--list"],
         "nvcc": ["nvcc", "--version"], "pudev": ["pudev", "mirror", "--show"]}


def _env(home: dict[str, str]) -> dict[str, str]:
    """This process's environment with HOME as docker would give a nameless uid."""
    env = {key: value for key, value in os.environ.items() if key not in ("HOME", "USER", "LOGNAME")}
    return {**env, **home}


def _run(argv: list[str], env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env=env, check=False)


def _writable(path: str) -> bool:
    return path != "/" and os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)


def test_this_process_has_a_writable_home_and_a_name() -> None:
    assert _writable(os.environ["HOME"]), os.environ["HOME"]
    assert getpass.getuser()  # torch.compile's cache path needs it; it raises for a uid without a name


@pytest.mark.parametrize("home", BROKEN_HOMES)
def test_python_programs_fix_home_themselves(home: str) -> None:
    probe = "import os, getpass; print(os.environ['HOME']); print(getpass.getuser())"
    result = _run([sys.executable, "-c", probe], env=_env(BROKEN_HOMES[home]))
    assert result.returncode == 0, result.stderr
    found, name = result.stdout.split()
    assert _writable(found) and name, result.stdout


@pytest.mark.parametrize("home", BROKEN_HOMES)
@pytest.mark.parametrize("shell", SHELLS)
def test_shells_fix_home(shell: str, home: str) -> None:
    script = 'printf "%s\\n" "$HOME"; touch "$HOME/.pudev-probe" && rm "$HOME/.pudev-probe" && echo wrote'
    result = _run([*SHELLS[shell], script], env=_env(BROKEN_HOMES[home]))
    lines = result.stdout.splitlines()
    assert lines[-2:] and lines[-1] == "wrote", f"{shell}: {result.stdout!r} {result.stderr[-800:]!r}"
    assert _writable(lines[-2])


@pytest.mark.parametrize("home", ["as started", *BROKEN_HOMES])
@pytest.mark.parametrize("shell", SHELLS)
def test_shells_find_what_pip_installs_for_the_user(shell: str, home: str) -> None:
    """`pip install` puts a user's commands (huggingface-cli, say) in ~/.local/bin: every shell has it
    on PATH, even before it exists, and after the image's own folders, so it shadows none of them."""
    env = dict(os.environ) if home == "as started" else _env(BROKEN_HOMES[home])
    result = _run([*SHELLS[shell], 'printf "%s\\n%s\\n" "$HOME" "$PATH"'], env=env)
    found_home, path = result.stdout.splitlines()[-2:]
    entries = path.split(":")
    user_bin = f"{found_home}/.local/bin"
    assert user_bin in entries, f"{shell}: {user_bin} is not on PATH={path}"
    pip_dir = os.path.dirname(shutil.which("pip") or "")
    assert entries.index(user_bin) > entries.index(pip_dir), f"{shell}: {user_bin} comes before {pip_dir}: {path}"


def test_zsh_offers_no_first_run_menu_in_a_fresh_home(tmp_path: Path) -> None:
    """A home without zsh startup files (a fresh volume, an arbitrary uid's own HOME) on a terminal:
    zsh-newuser-install would wait for a key press."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    controller, terminal = os.openpty()
    process = subprocess.Popen(["zsh", "-i", "-c", "echo ready"], stdin=terminal, stdout=terminal, stderr=terminal,
                               env=_env({"HOME": str(fresh)}), start_new_session=True)
    os.close(terminal)
    output, deadline = b"", time.monotonic() + 20
    try:
        while time.monotonic() < deadline and b"ready" not in output:
            if select.select([controller], [], [], 0.5)[0]:
                try:
                    output += os.read(controller, 4096)
                except OSError:  # the terminal closed: zsh is done
                    break
    finally:
        process.kill()
        process.wait()
        os.close(controller)
    assert b"ready" in output and b"newuser" not in output, output.decode(errors="replace")[-1500:]


@pytest.mark.parametrize("tool", TOOLS)
def test_tools_work_from_a_broken_home(tool: str) -> None:
    result = _run(TOOLS[tool], env=_env({"HOME": "/"}), timeout=300)
    assert result.returncode == 0, f"{tool}: {result.stdout[-1000:]} {result.stderr[-2000:]}"
    assert "Traceback" not in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize("shell", ["zsh", "bash"])
def test_cuda_switch_changes_the_toolkit(shell: str, record: ImageRecord) -> None:
    other = next(t.version for t in record.toolkits if t.version != record.default_toolkit)
    result = _run([shell, "-i", "-c", f'cuda-switch {other} >/dev/null 2>&1; echo "$CUDA_HOME"'],
                  env=_env({"HOME": "/"}))
    assert result.stdout.strip().splitlines()[-1] == f"/usr/local/cuda-{other}", result.stderr[-1000:]


def test_the_environment_comes_from_env_alone(record: ImageRecord) -> None:
    """What the entrypoint never sets, so a bypassed entrypoint loses nothing."""
    assert os.environ["CUDA_HOME"] == f"/usr/local/cuda-{record.default_toolkit}"
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == record.cuda_arch_list
    for variable in ("PIP_CONSTRAINT", "UV_CONSTRAINT"):
        constraints = Path(os.environ[variable]).read_text()
        assert f"torch=={record.torch}" in constraints.replace(" ", ""), constraints
    for tool in ("python", "pip", "jupyter", "nvcc", "cuda-switch", "pudev", "zsh"):
        assert shutil.which(tool), f"{tool} is not on PATH={os.environ['PATH']}"
    assert Path(str(shutil.which("nvcc"))).resolve() == Path(os.environ["CUDA_HOME"], "bin/nvcc").resolve()


def test_pip_uses_the_system_wide_mirror_from_a_fresh_home(record: ImageRecord, tmp_path: Path) -> None:
    files = MirrorFiles(root=Path("/"), home=tmp_path)
    listed = _run(["pip", "config", "list"], env=_env({"HOME": str(tmp_path)}))
    debug = _run(["pip", "config", "debug"], env=_env({"HOME": str(tmp_path)})).stdout
    assert "trusted-host" not in listed.stdout + debug
    if record.mirror == "none":
        assert not files.system_file("pip").exists() and "index-url" not in listed.stdout
        return
    index = MIRRORS[record.mirror].pypi_index
    assert f"global.index-url='{index}'" in listed.stdout, listed.stdout
    assert "/etc/pip.conf, exists: True" in debug and f"global.index-url: {index}" in debug, debug
    assert f'index-url = "{index}"' in files.system_file("uv").read_text()
    if files.conda_present:
        assert MIRRORS[record.mirror].conda_base in files.system_file("conda").read_text()


def _wheel(directory: Path) -> Path:
    """A tiny pure-Python wheel with one module, written directly."""
    dist_info = "pudev_anyuser_probe-1.0.dist-info"
    files = {"pudev_anyuser_probe.py": "WORKS = True\n",
             f"{dist_info}/METADATA": "Metadata-Version: 2.1\nName: pudev-anyuser-probe\nVersion: 1.0\n",
             f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: pudev-test\nRoot-Is-Purelib: true\n"
                                   "Tag: py3-none-any\n"}
    files[f"{dist_info}/RECORD"] = "".join(f"{path},,\n" for path in files) + f"{dist_info}/RECORD,,\n"
    wheel = directory / "pudev_anyuser_probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


REMOVE_PROBE = """\
import importlib.metadata, os
try:
    found = importlib.metadata.distribution("pudev-anyuser-probe")
except importlib.metadata.PackageNotFoundError:
    raise SystemExit
paths = [found.locate_file(entry) for entry in found.files or []]
for path in paths:
    if os.path.isfile(path):
        os.remove(path)
for folder in sorted({os.path.dirname(path) for path in paths}, key=len, reverse=True):
    if folder.endswith(".dist-info") and os.path.isdir(folder):
        os.rmdir(folder)
"""


@pytest.mark.parametrize("home", ["given", "/"])
def test_pip_install_works(tmp_path: Path, home: str) -> None:
    """Into the environment where this user may write it, else into ~/.local: pip's own fallback, which
    conda's Python and the system's both allow (a base whose Python leaves the user site off strands the
    user: nothing installs without root). Also from HOME=/, docker's HOME for a nameless uid: the install
    lands under the HOME the image picks, and Python finds it there."""
    env = dict(os.environ) if home == "given" else _env({"HOME": "/"})
    _wheel(tmp_path)
    writable = os.access(sysconfig.get_paths()["purelib"], os.W_OK)
    assert writable or site.ENABLE_USER_SITE, f"{sys.prefix} is read-only to uid {os.getuid()} and the user site is off"
    probe = [sys.executable, "-c", "import pudev_anyuser_probe as p; print(p.WORKS)"]
    assert _run(probe, env=env).returncode != 0, "the probe is installed already: a stale copy would prove nothing"
    install = _run([sys.executable, "-m", "pip", "install", "--no-index", "--find-links", str(tmp_path),
                    "pudev-anyuser-probe"], env=env, timeout=300)
    try:
        assert install.returncode == 0, install.stdout[-1500:] + install.stderr[-1500:]
        imported = _run(probe, env=env)
        assert imported.stdout.strip() == "True", imported.stderr[-1500:]
    finally:
        # By its own record: pip in a venv will not uninstall from the user site ("outside environment").
        _run([sys.executable, "-c", REMOVE_PROBE], env=env)


def test_workspace_is_writable_through_group_0() -> None:
    """OpenShift's convention: /workspace belongs to group 0 (setgid), so a random uid with gid 0
    writes it; another uid outside group 0 does not (mount a volume there, e.g. with fsGroup)."""
    workspace = Path("/workspace")
    info = workspace.stat()
    assert info.st_gid == 0 and info.st_mode & 0o2070 == 0o2070, oct(info.st_mode)
    in_group_0 = os.getgid() == 0 or 0 in os.getgroups()
    expected = os.getuid() in (0, info.st_uid) or in_group_0
    assert os.access(workspace, os.W_OK) is expected
    if expected:
        probe = workspace / f".pudev-probe-{os.getuid()}"
        probe.write_text("ok")
        try:
            assert probe.stat().st_gid == 0  # setgid: shared with every other uid in group 0
        finally:
            probe.unlink()
