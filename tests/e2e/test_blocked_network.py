"""A user's first hour behind a blocked network: only the chosen mirror's hosts answer, and every
other name hangs as a blocked host does (blocked_world.py, on an internal network this test makes,
so no packet leaves the machine). The session starts JupyterLab, runs a notebook over the HTTP API
(torch, torchvision, pandas, cv2, matplotlib, a tqdm bar, a plot, a Hugging Face request through
`pudev mirror --hf`), installs packages with pip, uv and apt. Every name asked and every connection is recorded: none
may be outside the mirror.

Kinder than China: the fake mirrors' certificates come from a test CA that the test adds to the
container's trust store (the real mirrors' certificates are public); the fake index holds only the
packages the session asks for; the fake mirror's apt archive is signed by a test key the
container is told to trust (debian_archive.py), not by Debian's; a connection to an address rather
than a name finds no route at once instead of hanging; the stand-ins' sources name no security
suite, which Tsinghua's help keeps upstream (the in-image and unit mirror tests cover that)."""

from __future__ import annotations

import json
import secrets
import shutil
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from debian_archive import SigningKey, signing_key, write_archive
from e2e_support import QUICK_HEALTH, LocalImage, Profiles
from jupyter_client_lite import JupyterServer, notebook
from tls_material import TlsMaterial

from pudev.engine import docker
from pudev.engine.containers import TrackedContainer
from pudev.mirror.apt import SYSTEM_CA_BUNDLE
from pudev.mirror.catalogue import MIRRORS
from pudev.mirror.models import HF_MIRRORS

pytestmark = [pytest.mark.engine, pytest.mark.slow]
HEALTH = "{{.State.Health.Status}}"
ADDRESS = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}"
WORLD_SCRIPTS = [Path(__file__).with_name(name) for name in ("blocked_world.py", "tls_accept.py")]
UV = Path(sys.executable).parent / "uv"  # make venv installs it
BUNDLE = f"/{SYSTEM_CA_BUNDLE}"  # the image's own system bundle, which update-ca-certificates rewrites
HF_NAME = "hf-mirror"
DEB = "pudev-blocked-probe"
CELL = """\
import os, json, urllib.request
import torch, torchvision, pandas, cv2, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from tqdm.auto import tqdm
total = sum(tqdm(range(3)))
plt.plot([1, 2, 3]); plt.savefig("/tmp/plot.png")
reply = urllib.request.urlopen(os.environ["HF_ENDPOINT"] + "/api/models/pudev/tiny", timeout=60).read()
print("session", torch.__version__, total, os.path.getsize("/tmp/plot.png") > 0, json.loads(reply)["id"])
"""


def _mirror_hosts(name: str) -> set[str]:
    mirror = MIRRORS[name]
    urls = (mirror.pypi_index, mirror.apt_base, mirror.conda_base, mirror.torch_wheels, HF_MIRRORS[HF_NAME][0])
    return {urlsplit(url).hostname or "" for url in urls if url}


def _wheel(directory: Path, name: str, *, requires: str = "") -> None:
    """A tiny pure-Python wheel, written directly."""
    module = name.replace("-", "_")
    dist_info = f"{module}-1.0.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n" + (f"Requires-Dist: {requires}\n" if requires
                                                                         else "")
    files = {f"{module}.py": "WORKS = True\n", f"{dist_info}/METADATA": metadata,
             f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: pudev-test\nRoot-Is-Purelib: true\n"
                                   "Tag: py3-none-any\n"}
    files[f"{dist_info}/RECORD"] = "".join(f"{path},,\n" for path in files) + f"{dist_info}/RECORD,,\n"
    with zipfile.ZipFile(directory / f"{module}-1.0-py3-none-any.whl", "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)


@pytest.fixture
def blocked_network() -> Iterator[str]:
    name = f"pudev-blocked-{secrets.token_hex(4)}"
    docker.run(["network", "create", "--internal", "--label", "org.pudev.tracked=1", name], timeout=60)
    try:
        yield name
    finally:
        docker.run(["network", "rm", name], check=False, timeout=60)


def _start_world(image: LocalImage, network: str, folder: Path, hosts: set[str]) -> tuple[TrackedContainer, str]:
    tls = TlsMaterial.create(folder / "tls", tuple(sorted(hosts)))
    served = {name: f"/world/{path.relative_to(folder)}" for name, path in (("cert", tls.cert_file),
                                                                           ("key", tls.key_file))}
    (folder / "wheels").mkdir()
    _wheel(folder / "wheels", "pudev-blocked-probe")
    _wheel(folder / "wheels", "pudev-wants-other-torch", requires="torch==0.0.1")
    for script in WORLD_SCRIPTS:
        shutil.copy(script, folder / script.name)
    (folder / "archive").mkdir()
    (folder / "config.json").write_text(json.dumps({
        "mirror_hosts": sorted(hosts), **served, "wheels": "/world/wheels", "archive": "/world/archive",
        "log": "/world/log.jsonl"}))
    folder.chmod(0o777)  # the world writes its log as root; the host reads it
    world = TrackedContainer(image.tag, purpose="world", options=[
        "--network", network, "--user", "0", "--entrypoint", "python3", "--volume", f"{folder}:/world"])
    world.start(["/world/blocked_world.py", "/world/config.json"])
    deadline = time.monotonic() + 60
    while "serving" not in world.logs() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "serving" in world.logs(), world.logs()[-2000:]
    return world, world.inspect(ADDRESS)


@pytest.fixture
def archive_key(tmp_path: Path) -> Iterator[SigningKey]:
    with signing_key(tmp_path / "archive-key.asc") as key:
        yield key


def _write_archive(user: TrackedContainer, root: Path, key: SigningKey) -> None:
    """The fake mirror's archive, for the suites the container's apt sources name (pudev mirror has just
    pointed them at the mirror) and its architecture."""
    uris = user.exec(["apt-get", "update", "--print-uris"], user="0", timeout=60)
    assert uris.returncode == 0, uris.stderr[-1000:]
    urls = [line.split()[0].strip("'") for line in uris.stdout.splitlines() if line.strip()]
    in_release = [url for url in urls if url.endswith("/InRelease")]
    assert in_release, uris.stdout[-1000:]
    architecture = user.exec(["dpkg", "--print-architecture"], timeout=60).stdout.strip()
    write_archive(root, in_release, architecture, DEB, key)


def _asked(log: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# The refusal is the point: pip's first and last lines stay, on stderr.
@pytest.mark.allow_log(r"ERROR: (Cannot install pudev-wants-other-torch|ResolutionImpossible)")
@pytest.mark.parametrize("case", [("local", "aliyun"), ("local-current", "tuna")], ids="-".join)
def test_a_first_hour_touches_only_the_mirror(profiles: Profiles, case: tuple[str, str], blocked_network: str,
                                             archive_key: SigningKey, tmp_path: Path) -> None:
    build, mirror = case  # the profile's image, and the mirror it is switched to
    image = profiles.image(build)
    hosts = _mirror_hosts(mirror)
    world, world_address = _start_world(image, blocked_network, tmp_path / "world", hosts)
    (tmp_path / "resolv.conf").write_text(f"nameserver {world_address}\n")
    token = secrets.token_hex(16)
    user = TrackedContainer(image.tag, purpose="blocked", options=[
        *QUICK_HEALTH, "--network", blocked_network, "--env", f"JUPYTER_TOKEN={token}",
        "--volume", f"{tmp_path / 'resolv.conf'}:/etc/resolv.conf:ro",
        "--volume", f"{tmp_path / 'world/tls/ca.crt'}:/usr/local/share/ca-certificates/pudev-test.crt:ro",
        "--volume", f"{archive_key.public}:/etc/apt/trusted.gpg.d/pudev-test.asc:ro",
        # the test CA joins the system bundle below; these point every client at that bundle
        "--env", f"SSL_CERT_FILE={BUNDLE}", "--env", f"PIP_CERT={BUNDLE}", "--env", "UV_SYSTEM_CERTS=1"])
    with world, user:
        user.start()
        started = time.monotonic()
        for command in (["update-ca-certificates"], ["pudev", "mirror", mirror], ["pudev", "mirror", "--hf", HF_NAME]):
            done = user.exec(command, user="0", timeout=120)
            assert done.returncode == 0, f"{command}: {done.stdout[-1000:]}{done.stderr[-1000:]}"
        _write_archive(user, tmp_path / "world/archive", archive_key)
        assert user.wait_for(HEALTH, "healthy", timeout=180) == "healthy", user.logs()[-3000:]
        server = JupyterServer(port=8888, token=token, host=user.inspect(ADDRESS))
        status, _ = server.request("PUT", "api/contents/first-hour.ipynb", notebook(CELL))
        assert status in (200, 201)
        status, session = server.request("POST", "api/sessions", {
            "path": "first-hour.ipynb", "type": "notebook", "name": "first-hour.ipynb", "kernel": {"name": "python3"}})
        assert status == 201, session
        printed = server.run_code(session["kernel"]["id"], CELL, timeout=300)
        assert printed.strip().endswith("3 True pudev/tiny"), printed

        probe = user.exec(["pip", "install", "--target", "/tmp/pip-target", "pudev-blocked-probe"], timeout=300)
        assert probe.returncode == 0, probe.stdout[-1500:] + probe.stderr[-1500:]
        refused = user.exec(["pip", "install", "--target", "/tmp/pip-target", "pudev-wants-other-torch"], timeout=300)
        said = refused.stdout + refused.stderr  # pip's report is INFO, on stdout
        assert refused.returncode != 0 and "pudev: pudev-wants-other-torch 1.0 wants torch==0.0.1" in said, said
        # The image ships uv's settings, not uv: the user's own `pip install uv` puts this same binary on PATH.
        copied = docker.run(["cp", str(UV), f"{user.name}:/usr/local/bin/uv"], check=False, timeout=60)
        assert copied.returncode == 0, copied.stderr
        uv = user.exec(["uv", "pip", "install", "--target", "/tmp/uv-target", "pudev-blocked-probe"], timeout=300)
        assert uv.returncode == 0, uv.stdout[-1500:] + uv.stderr[-1500:]
        for command in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", DEB]):
            apt = user.exec(command, user="0", timeout=300)
            assert apt.returncode == 0, f"{command}: {apt.stdout[-1500:]}{apt.stderr[-1500:]}"
        assert user.exec(["cat", f"/usr/share/{DEB}/works"], timeout=60).stdout == "yes\n"
        took = time.monotonic() - started

    asked = _asked(tmp_path / "world/log.jsonl")
    names = {entry.get("name") or entry.get("host", "") for entry in asked}
    # A reverse lookup asks the resolver about an address; it opens no connection to any host.
    outside = sorted(name for name in names - hosts if name and not name.endswith((".in-addr.arpa", ".ip6.arpa")))
    print(f"{build} on {mirror}: {took:.0f} s behind the blocked network, asking for {sorted(names)}")
    assert not outside, f"asked for hosts outside the {mirror} mirror: {outside}"
    paths = {(entry["host"], entry["path"]) for entry in asked if entry["kind"] == "http"}
    index = urlsplit(MIRRORS[mirror].pypi_index)
    assert (index.hostname, f"{index.path.rstrip('/')}/pudev-blocked-probe/") in paths, sorted(paths)
    assert (urlsplit(HF_MIRRORS[HF_NAME][0]).hostname, "/api/models/pudev/tiny") in paths, sorted(paths)
    apt_host = urlsplit(MIRRORS[mirror].apt_base).hostname
    assert any(host == apt_host and path.endswith(f"/{DEB}_1.0_all.deb") for host, path in paths), sorted(paths)
