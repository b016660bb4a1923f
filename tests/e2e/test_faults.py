"""Faults lose nothing: an interrupted build, a failed requirements stage, a
tampered lock, two builds at once, a hanging test run, the daemon going away.
Builds here use their own image name, so the main local image is never touched."""

from __future__ import annotations

import http.server
import os
import random
import re
import secrets
import signal
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import PUDEV, LocalImage, build_context_copy, lock_in, profile_variant, run_pudev
from secret_scan import find_secret
from shards import newest_profile

from pudev.building.cabundle import resolve_ca_bundle
from pudev.common.gpu_arch import capability_of
from pudev.devtools.standins import load_standins
from pudev.engine import docker
from pudev.engine.containers import TRACKED_LABEL
from pudev.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.slow]
FAULT_IMAGE = "pudev-fault/pytorch-universal-dev"
FAULT_VARIANT = profile_variant(newest_profile())
FAULT_TAG = f"{FAULT_IMAGE}:{FAULT_VARIANT.name}"
# A different arch list changes an ENV early in the final stage, so the OS-package and
# requirements steps (the ones that mount the CA secret) really run again.
FAULT_BUILD = ["build", "--profile", newest_profile(), "--set", f"image={FAULT_IMAGE}", "--set",
               "cuda_arch_list=8.0;9.0"]
# The capabilities every toolkit of the image compiles for (the variant's catalogue range), from nvcc's list.
ARCHES = tuple(arch for arch in ("5.0", "5.2", "6.0", "6.1", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0",
                                 "10.0", "10.3", "11.0", "12.0", "12.1")
               if all(capability_of(toolkit.min_arch) <= capability_of(arch) <= capability_of(toolkit.max_arch)
                      for toolkit in FAULT_VARIANT.toolkits))


def fresh_build(rng: random.Random) -> list[str]:
    """FAULT_BUILD with an arch list no earlier run used, so its steps cannot come from the cache: 4 to 7
    arches in a random order (order is free in TORCH_CUDA_ARCH_LIST), one of tens of thousands of lists or more, so
    the cache a CI machine keeps between runs never holds it by chance (replaying a seed whose build
    finished does: run `docker builder prune` first)."""
    arches = rng.sample(ARCHES, rng.randint(4, 7))
    return [*FAULT_BUILD[:-1], "cuda_arch_list=" + ";".join(arches) + "+PTX"]


@pytest.fixture(scope="module")
def unique_ca_bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The host's bundle plus a freshly made CA: its body exists nowhere else."""
    folder = tmp_path_factory.mktemp("ca")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    f"/CN=pudev-secret-probe-{secrets.token_hex(8)}", "-keyout", str(folder / "key.pem"),
                    "-out", str(folder / "probe.pem")], check=True, capture_output=True)
    probe = (folder / "probe.pem").read_text()
    # The bundle the build would use anyway (PIP_CERT & co.), else the system's default trust store.
    host = resolve_ca_bundle(None) or Path(ssl.get_default_verify_paths().cafile or "")
    bundle = folder / "bundle.pem"
    bundle.write_text((host.read_text() if host.is_file() else "") + "\n" + probe)
    body = "".join(probe.strip().splitlines()[1:-1])
    return bundle, body[40:120]  # a slice of the base64 body: unique to this certificate


@pytest.fixture(scope="module")
def fault_image_cleanup(docker_engine: str) -> Iterator[None]:
    yield
    docker.run(["rmi", FAULT_TAG], check=False)


@pytest.fixture(scope="module")
def fresh_with_bundle() -> dict[str, bool]:
    """Whether FAULT_TAG was built in this module with the unique bundle on steps that really ran."""
    return {}


@pytest.fixture
def fault_image(newest_image: LocalImage, unique_ca_bundle: tuple[Path, str], fault_image_cleanup: None,
                fresh_with_bundle: dict[str, bool], rng: random.Random) -> str:
    """FAULT_TAG, built with the unique CA bundle on a fresh arch list (so the steps that mount the
    secret really ran with it): the SIGINT test's rebuild, or a build made here when a test runs alone."""
    if not fresh_with_bundle.get("built") or docker.image_id(FAULT_TAG) is None:
        result = run_pudev(*fresh_build(rng), "--ca-bundle", str(unique_ca_bundle[0]), timeout=3600)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
        fresh_with_bundle["built"] = True
    return FAULT_TAG


def _containers() -> set[str]:
    return set(docker.run(["ps", "-aq"]).stdout.split())


def _final_steps(log: str, status: str) -> set[str]:
    """'[final 7/20]' of the steps that ended with `status` (DONE or CACHED) in a plain-progress log.
    FROM is left out: BuildKit resolves the base again on every build and never reports it CACHED."""
    headers = {step: " ".join(position.split()) for step, position in
               re.findall(r"^#(\d+) (\[final\s+\d+/\d+\]) (?!FROM )", log, re.MULTILINE)}
    ended = set(re.findall(rf"^#(\d+) {status}\b", log, re.MULTILINE))
    return {headers[step] for step in ended if step in headers}


class Gate:
    """An HTTP server on 127.0.0.1 that answers 503 until `open()`: a build step (RUN steps share the host's
    network) that waits for its 200 cannot finish before the test lets it."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        gate = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200 if gate.opened.is_set() else 503)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def open(self) -> None:
        self.opened.set()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


HELD = "sigint test: the OS-package step is held"


@pytest.fixture
def held_os_step(newest_image: LocalImage, tmp_path: Path) -> Iterator[tuple[Path, Gate]]:
    """A build context whose OS-package step, after its packages, says it is held and waits for the gate:
    an interrupt then always lands inside the step, never after the tag (2026-12-05: a random delay after
    the step's header came after a 27-second, mostly cached build had finished). The port makes the script,
    and so the step and every one after it, new to the cache."""
    gate = Gate()
    root = build_context_copy(tmp_path)
    script = root / "docker/steps/install-os-packages.sh"
    script.write_text(script.read_text() + f'echo "{HELD}"\n'
                      f"python3 -c 'import time, urllib.request as u\nwhile True:\n    try:\n"
                      f'        u.urlopen("http://127.0.0.1:{gate.port}/", timeout=5); break\n'
                      f"    except OSError: time.sleep(0.2)'\n")
    yield root, gate
    gate.close()


def test_sigint_mid_build_creates_no_tag_and_the_rerun_reuses_the_cache(
        held_os_step: tuple[Path, Gate], unique_ca_bundle: tuple[Path, str], fault_image_cleanup: None,
        fresh_with_bundle: dict[str, bool], rng: random.Random) -> None:
    bundle, _ = unique_ca_bundle
    root, gate = held_os_step
    docker.run(["rmi", FAULT_TAG], check=False)
    before = _containers()
    build = fresh_build(rng)
    # Ctrl-C reaches a foreground process, whose SIGINT is not ignored; a run started in the background
    # of a shell without job control inherits it ignored. A handled signal is default again after exec.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen([*PUDEV, *build, "--ca-bundle", str(bundle)], cwd=REPO_ROOT,
                                   env={**os.environ, "PUDEV_ROOT": str(root)},
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or []), daemon=True)
    reader.start()
    try:
        # Interrupt while the OS-package step is held: it cannot finish before the gate opens.
        deadline = time.monotonic() + 600
        while not any(HELD in line for line in lines):
            assert time.monotonic() < deadline and process.poll() is None, "".join(lines)[-3000:]
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)
    finally:
        # A build left running would hold pudev's build lock, and every later build would wait on it.
        if process.poll() is None:
            gate.open()
            process.kill()
            process.wait()
    reader.join(timeout=30)
    interrupted_log = "".join(lines)
    assert process.returncode == 130, interrupted_log[-3000:]
    assert "interrupted: no tag was created or moved" in interrupted_log
    assert docker.image_id(FAULT_TAG) is None
    assert _containers() == before
    docker_root = docker.run(["info", "--format", "{{.DockerRootDir}}"]).stdout.strip()
    runc_root = Path(docker_root) / "buildkit" / "executor"
    if runc_root.exists():
        leftovers = subprocess.run(["runc", "--root", str(runc_root), "list", "-q"], capture_output=True, text=True,
                                   check=False).stdout.split()
        assert not leftovers, f"build containers left behind: {leftovers}"

    gate.open()
    rerun = run_pudev(*build, "--ca-bundle", str(bundle), env={"PUDEV_ROOT": str(root)}, timeout=3600)
    assert rerun.returncode == 0, rerun.stdout[-3000:]
    cached = _final_steps(rerun.stdout, "CACHED")
    assert _final_steps(interrupted_log, "DONE") <= cached, "steps done before the interrupt must be reused"
    assert docker.image_id(FAULT_TAG) is not None
    fresh_with_bundle["built"] = True  # the rest of the interrupted steps ran now, with the bundle


def test_no_secret_material_in_any_layer(unique_ca_bundle: tuple[Path, str], fault_image: str,
                                        newest_image: LocalImage) -> None:
    """Every layer the fault build made with the unique bundle mounted; the local image's layers were made before
    that bundle existed, so they cannot hold it (secret_scan.py)."""
    _, needle = unique_ca_bundle
    found, folders = find_secret(FAULT_TAG, newest_image.tag, needle)
    assert not found, f"CA bundle bytes in layers: {found}"
    if folders is not None:  # the fresh arch list rebuilt the OS-package and requirements steps at the least
        assert folders >= 4, f"only {folders} new layer(s) read"


def test_the_secret_scan_finds_what_a_layer_holds(unique_ca_bundle: tuple[Path, str], standins: None) -> None:
    """The scan above can fail: an image that does carry the needle, in a layer a later one deletes, is caught
    by the scan of its `docker save`, which reads the config too (the label, and the history that names it); on
    the small OS stand-in: the scan is what is proven."""
    _, needle = unique_ca_bundle
    probe, os_image = "pudev-secret-probe:leaky", load_standins()[0].image
    dockerfile = (f"FROM {os_image}\nRUN printf '%s' '{needle}' > /etc/leak && chmod 0 /etc/leak\nRUN rm /etc/leak\n"
                  f"LABEL org.pudev.test.leak={needle}\n")
    subprocess.run([docker.docker_cli(), "build", "--quiet", "-t", probe, "-"], input=dockerfile, text=True,
                   capture_output=True, check=True, env=docker.docker_env())
    try:
        found, layers = find_secret(probe, os_image, needle)
        assert layers == 2, layers  # the two RUN steps' layers: what the OS image lacks
        assert [name.rsplit(":", 1)[1] for name in found if ":" in name] == ["etc/leak"], found
        assert [name for name in found if ":" not in name], f"the label's config was not read: {found}"
    finally:
        docker.run(["rmi", probe], check=False)


def _image_only(tag: str, folder: Path) -> str:
    """A throwaway image (no layers, a unique label) that `tag` alone names; its id."""
    (folder / "Dockerfile").write_text(f"FROM scratch\nLABEL org.pudev.test.throwaway={secrets.token_hex(8)}\n")
    docker.run(["build", "--quiet", "--tag", tag, str(folder)])
    return docker.image_id(tag) or ""


def _removed_within(image: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while docker.inspect_image(image) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def test_two_builds_at_once_serialise(fault_image_cleanup: None, tmp_path: Path) -> None:
    """Whichever takes the lock second waits for the first build; the image the tag named before is
    removed (after pudev returned) once no name holds it."""
    replaced = _image_only(FAULT_TAG, tmp_path)
    first = subprocess.Popen([*PUDEV, *FAULT_BUILD], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen([*PUDEV, *FAULT_BUILD], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    outputs = [process.communicate(timeout=1800) for process in (first, second)]
    assert first.returncode == 0 and second.returncode == 0, outputs
    assert any(f"another build of {FAULT_TAG} is running" in err for _, err in outputs)
    built = {re.search(r"built \S+ \((\w+)\)", out).group(1) for out, _ in outputs}  # type: ignore[union-attr]
    assert len(built) == 1
    assert (docker.image_id(FAULT_TAG) or "")[7:19] in built
    assert _removed_within(replaced, 120), f"the replaced image {replaced[7:19]} is still there"


def _build_in(root: Path) -> subprocess.CompletedProcess[str]:
    return run_pudev(*FAULT_BUILD, env={"PUDEV_ROOT": str(root)}, timeout=1800)


def test_unresolvable_requirement_names_the_package_and_keeps_tags(tmp_path: Path, fault_image: str) -> None:
    good = docker.image_id(fault_image)
    assert good is not None
    root = build_context_copy(tmp_path)
    lock = lock_in(root, newest_profile())
    lock.write_text(re.sub(r"^tqdm==\S+", "tqdm==99.0.0", lock.read_text(), flags=re.MULTILINE))
    result = _build_in(root)
    assert result.returncode != 0
    first_line = result.stderr.strip().splitlines()[0]
    # tqdm is one of the rest's packages: the error names that step by its command.
    assert first_line.startswith(f"pudev: error: build of {FAULT_TAG} failed in stage 'final'"), first_line
    assert "install-packages.sh" in first_line and "the-rest" in first_line, first_line
    assert "tqdm==99.0.0" in result.stderr
    assert docker.image_id(FAULT_TAG) == good


def test_tampered_lock_hash_fails_with_a_hash_error(tmp_path: Path, fault_image: str) -> None:
    good = docker.image_id(fault_image)
    assert good is not None
    root = build_context_copy(tmp_path)
    lock = lock_in(root, newest_profile())
    text = lock.read_text()
    block = re.search(r"^tqdm==\S+ \\\n(?:\s+--hash=sha256:\w+(?: \\)?\n)+", text, re.MULTILINE)
    assert block is not None
    tampered = re.sub(r"sha256:\w+", "sha256:" + "0" * 64, block.group(0))
    lock.write_text(text.replace(block.group(0), tampered))
    result = _build_in(root)
    assert result.returncode != 0
    # uv (which installs the lock) reports "Hash mismatch for `tqdm==...`"; pip would say
    # "THESE PACKAGES DO NOT MATCH THE HASHES": either way the package and the word hash.
    message = result.stderr.lower()
    assert "hash mismatch" in message or "do not match the hashes" in message, result.stderr[-2000:]
    assert "tqdm" in message
    assert docker.image_id(FAULT_TAG) == good


def test_test_run_past_its_timeout_is_stopped_and_removed(newest_image: LocalImage) -> None:
    started = time.monotonic()
    result = run_pudev("test", "--profile", newest_profile(), "--timeout", "8", "--", "-k",
                       "test_cuda_extension_builds_and_its_host_entry_point_runs", timeout=600)
    assert result.returncode != 0
    assert all(word in result.stderr for word in ("8 s", "container was removed")), result.stderr[-2000:]
    assert time.monotonic() - started < 120
    assert not docker.run(["ps", "-aq", "--filter", f"label={TRACKED_LABEL}"]).stdout.split()


def _stop_daemon() -> None:
    pids = subprocess.run(["pidof", "dockerd"], capture_output=True, text=True, check=False).stdout.split()
    for pid in pids:
        os.kill(int(pid), signal.SIGTERM)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and subprocess.run(["pidof", "dockerd"], capture_output=True,
                                                         check=False).returncode == 0:
        time.sleep(0.5)


def test_daemon_stopped_during_a_test_run(newest_image: LocalImage) -> None:
    if os.environ.get("PUDEV_DISRUPTIVE_TESTS") != "1":
        if os.environ.get("PUDEV_STRICT") == "1":
            pytest.fail("PUDEV_STRICT=1 but PUDEV_DISRUPTIVE_TESTS is not set")
        pytest.skip("stops this machine's Docker daemon; set PUDEV_DISRUPTIVE_TESTS=1 (.ci/run does)")
    process = subprocess.Popen([*PUDEV, "test", "--profile", newest_profile()], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if docker.run(["ps", "-q", "--filter", f"label={TRACKED_LABEL}"], check=False).stdout.strip():
            break
        time.sleep(0.5)
    time.sleep(3)
    _stop_daemon()
    _, stderr = process.communicate(timeout=300)
    try:
        assert process.returncode != 0
        assert "the Docker daemon went away while testing" in stderr or "cannot reach the Docker daemon" in stderr
        assert "Traceback" not in stderr
    finally:
        setup = subprocess.run(["sh", str(REPO_ROOT / "scripts/host-setup.sh"), "engine"], capture_output=True,
                               text=True, check=False)
        assert setup.returncode == 0, setup.stderr
    time.sleep(2)
    assert not docker.run(["ps", "-aq", "--filter", f"label={TRACKED_LABEL}"]).stdout.split()
