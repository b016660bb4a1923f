"""Mirror files baked in at build time (system-wide, so every user id and a fresh home get
them), and a switch-and-back as the default user (their own files, no root needed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from pudev.image.record import ImageRecord
from pudev.mirror.catalogue import MIRRORS
from pudev.mirror.config import written_by_pudev
from pudev.mirror.mirror_files import MirrorFiles


def _pudev_mirror(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["pudev", "mirror", *args], capture_output=True, text=True, timeout=60, check=False)


def _files() -> MirrorFiles:
    return MirrorFiles(root=Path("/"), home=Path.home())


def test_baked_in_files_are_system_wide_and_match_the_build_argument(record: ImageRecord) -> None:
    files = _files()
    assert files.originals.is_dir(), "the base's apt sources must be kept for `pudev mirror none`"
    assert not any(files.user_file(tool).exists() for tool in files.tools()), "the build wrote into a home"
    apt = "".join(path.read_text() for path in files.apt_files())
    if record.mirror == "none":
        assert not any(files.system_file(tool).exists() for tool in files.tools())
        return
    mirror = MIRRORS[record.mirror]
    for tool in files.tools():
        path = files.system_file(tool)
        text = path.read_text()
        assert written_by_pudev(text) and path.stat().st_mode & 0o044 == 0o044, path
        assert "trusted-host" not in text and "insecure" not in text, path
    assert f"index-url = {mirror.pypi_index}" in files.system_file("pip").read_text()
    assert mirror.apt_base.split("://")[1] in apt
    show = _pudev_mirror("--show")
    assert show.stdout.startswith(f"apt: {record.mirror}  pip: {record.mirror}  uv: {record.mirror}"), show.stdout


def test_switch_and_back_as_the_default_user(record: ImageRecord) -> None:
    """Without root a user switches their own files, which win over the system-wide ones."""
    files = _files()
    other = "tuna" if record.mirror != "tuna" else "aliyun"
    try:
        switched = _pudev_mirror(other)
        assert switched.returncode == 0, switched.stderr
        assert "apt sources unchanged: they need root" in switched.stdout
        assert f"pip: {other}  uv: {other}" in switched.stdout
        pip_config = subprocess.run(["pip", "config", "get", "global.index-url"], capture_output=True, text=True,
                                    check=True).stdout.strip()
        assert pip_config == MIRRORS[other].pypi_index
        back = _pudev_mirror("none")
        assert back.returncode == 0 and not files.user_file("pip").exists()
        if record.mirror != "none":  # the image-wide setting is root's to change, and it says so
            assert f"pip: {record.mirror}" in back.stdout and "docker exec -u root" in back.stdout
    finally:
        for tool in files.tools():
            path = files.user_file(tool)
            if path.exists() and written_by_pudev(path.read_text()):
                path.unlink()
    assert _pudev_mirror("--show").stdout.startswith(f"apt: {record.mirror}  pip: {record.mirror}")


def test_apt_switch_needs_root_and_says_so() -> None:
    assert os.getuid() != 0
    result = _pudev_mirror("tuna")
    try:
        assert "need root" in result.stdout
    finally:
        _pudev_mirror("none")


def _endpoint_in_a_new_python() -> str:
    return subprocess.run(["python", "-c", "import os; print(os.environ.get('HF_ENDPOINT', ''))"],
                          capture_output=True, text=True, timeout=60, check=True).stdout.strip()


def test_hugging_face_endpoint_is_opt_in_and_reaches_a_new_python() -> None:
    """No endpoint until asked (the one mirror is a third party's); then every new Python, Jupyter
    kernels included, gets it before huggingface_hub reads it at import."""
    files = _files()
    assert _endpoint_in_a_new_python() == "", "the image must not send downloads to a third party by default"
    try:
        chosen = _pudev_mirror("--hf", "hf-mirror")
        assert chosen.returncode == 0 and "not by Hugging Face" in chosen.stdout, chosen.stderr
        assert "hf: hf-mirror" in chosen.stdout
        assert _endpoint_in_a_new_python() == "https://hf-mirror.com"
        facts = json.loads(subprocess.run(["pudev", "verify", "--cpu", "--json"], capture_output=True, text=True,
                                          timeout=300, check=False).stdout)["facts"]
        assert facts["hf_endpoint"] == "https://hf-mirror.com"
    finally:
        _pudev_mirror("--hf", "none")
    assert not files.models_file(system=False).exists()
    assert _endpoint_in_a_new_python() == ""


def test_show_names_torchs_own_wheels_for_this_images_cuda(record: ImageRecord) -> None:
    lines = _pudev_mirror("--show").stdout.splitlines()
    folder = MIRRORS[record.mirror].torch_wheels if record.mirror in MIRRORS else ""
    if not folder:
        assert len(lines) == 1, lines
        return
    assert lines[1].endswith(f"pip install -f {folder}/cu{record.cuda.replace('.', '')}/ PACKAGE"), lines
