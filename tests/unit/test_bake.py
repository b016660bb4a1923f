"""Each bake target is the build `pudev build` runs for its variant: the same labels,
every build argument (the input images' digests included), tag, CA secret and
platform, read back from the docker command field by field. Checked on synthetic
matrices, today's and each stand-in profile, so it holds for any matrix; then how
bake finds each digest: a pinned reference, this engine, the registry, or one error."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from dockerfiles import passed_args
from fake_digests import FakeRegistry
from matrices import HASHED_LOCK, WriteMatrix, pin, pinned, synthetic

from pudev.building import digests, requirement_locks
from pudev.building.bake import CA_SECRET, CA_VARIABLE, bake_command, bake_target
from pudev.building.digests import identify
from pudev.building.input_images import ImageIdentity, input_images
from pudev.building.labels import OCI, PUDEV, SourceInfo, source_info
from pudev.building.plan_assembly import BuildOptions, plan_builds
from pudev.building.record import RECORD_ARG
from pudev.cli import main
from pudev.common.errors import PudevError
from pudev.common.platforms import native_platform
from pudev.config.loader import load_matrix
from pudev.config.model import Variant
from pudev.config.profiles import profile_names
from pudev.config.selection import Selection, resolve
from pudev.engine import images
from pudev.paths import DOCKERFILE, REPO_ROOT

STANDINS = "pudev-standin/"  # images built on this engine: an id, no registry digest
ELSEWHERE = "registry.example.com:5000/team"
FOREIGN = "linux/arm64" if native_platform() == "linux/amd64" else "linux/amd64"


def _local_id(reference: str) -> str:
    return "sha256:" + hashlib.sha256(f"local {reference}".encode()).hexdigest()


def _engine_with_standins(reference: str) -> tuple[str, str]:
    """images.identity on an engine that holds the stand-ins and nothing pulled."""
    return ("", _local_id(reference)) if reference.startswith(STANDINS) else ("", "")


@dataclass(frozen=True)
class Case:
    selection: Selection
    flags: list[str]  # the same selection and build options as `pudev bake` flags
    options: BuildOptions

    @property
    def variants(self) -> tuple[Variant, ...]:
        selected = resolve(self.selection, require_names=False)
        return selected.variants or tuple(selected.matrix.variants.values())


def _elsewhere() -> dict[str, Any]:
    """The synthetic matrix built for another platform, from another registry, one base pinned."""
    data = synthetic()
    data.update(platforms=[FOREIGN], image=f"{ELSEWHERE}/dev-image", mirror="tuna")
    for toolkit in data["toolkits"].values():
        toolkit["platforms"] = [FOREIGN]
    data["toolkits"]["13.0"]["image"] = f"{ELSEWHERE}/cuda:13.0-devel"
    data["variants"]["cu129"]["base_image"] = pin(data["variants"]["cu129"]["base_image"])
    return data


NO_CA = BuildOptions(no_ca_bundle=True)
CACHED = BuildOptions(no_ca_bundle=True, cache_from=("type=registry,ref=x.example/cache",), cache_to=("type=inline",),
                      no_cache=True)
CACHED_FLAGS = ["--no-ca-bundle", "--cache-from", "type=registry,ref=x.example/cache", "--cache-to", "type=inline",
                "--no-cache"]
CASES = ["synthetic", "elsewhere", "today", *(f"profile {name}" for name in profile_names())]


@pytest.fixture(params=CASES)
def case(request: pytest.FixtureRequest, matrix_file: WriteMatrix, lock_folder: Path, tmp_path: Path,
         monkeypatch: pytest.MonkeyPatch) -> Case:
    """A matrix, a selection and build options, on an engine that holds the stand-ins; every lock present."""
    name = str(request.param)
    bundle = tmp_path / "corp-ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(images, "identity", _engine_with_standins)
    if name.startswith("profile "):
        profile = name.removeprefix("profile ")
        case = Case(Selection(profile=profile), ["--profile", profile, "--no-ca-bundle"], NO_CA)
    elif name == "today":
        case = Case(Selection(), ["--ca-bundle", str(bundle)], BuildOptions(ca_bundle=str(bundle)))
    elif name == "elsewhere":
        path = matrix_file(_elsewhere())
        case = Case(Selection(variants_file=path), ["--variants-file", str(path), *CACHED_FLAGS], CACHED)
    else:
        path = matrix_file()
        case = Case(Selection(variants_file=path), ["--variants-file", str(path), "--no-ca-bundle"], NO_CA)
    for variant in case.variants:  # a lock the matrix names (another platform's, say) that no test wrote
        if not requirement_locks.lock_path(variant).exists():
            requirement_locks.lock_path(variant).write_text(HASHED_LOCK)
    return case


def _bake(flags: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["bake", "--out", "-", *flags]) == 0, capsys.readouterr().err
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def _expected_identity(reference: str, registry: FakeRegistry) -> ImageIdentity:
    """The rule, restated: a pinned digest as written, else this engine's copy, else the registry's tag."""
    if "@sha256:" in reference:
        return ImageIdentity(digest=reference.split("@", 1)[1])
    if reference.startswith(STANDINS):
        return ImageIdentity(image_id=_local_id(reference))
    return ImageIdentity(digest=registry.digest_of(reference))


def _options(command: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """A `docker build` command read back: each option's values, and the positional arguments."""
    assert command[0] == "build"
    options: dict[str, list[str]] = {}
    positional: list[str] = []
    rest = iter(command[1:])
    for token in rest:
        if token in ("--no-cache", "--load"):
            options[token] = []
        elif token.startswith("--"):
            name, _, value = token.partition("=")
            options.setdefault(name, []).append(value if value else next(rest))
        else:
            positional.append(token)
    return options, positional


def _as_bake_target(command: list[str]) -> dict[str, Any]:
    """What bake must be told to run the same build as this docker command. Every option is
    accounted for, so one the command gains and bake does not fails here."""
    options, (context,) = _options(command)
    target: dict[str, Any] = {
        "context": os.path.relpath(context, REPO_ROOT),
        "dockerfile": os.path.relpath(options.pop("--file")[0], REPO_ROOT),
        "target": options.pop("--target")[0],
        "platforms": options.pop("--platform", [native_platform()]),
        "tags": options.pop("--tag"),
        "args": dict(item.split("=", 1) for item in options.pop("--build-arg")),
        "labels": dict(item.split("=", 1) for item in options.pop("--label")),
    }
    if "--secret" in options:
        target["secret"] = [CA_SECRET]  # its source, the CA_BUNDLE variable, is checked by _ca_source
    # The one fact a bake file may lack (README): the base's local id, known only to the engine that pulls it.
    if target["labels"].get(f"{PUDEV}.base.id") == "<BASE_ID>":
        del target["labels"][f"{PUDEV}.base.id"]
    for flag in ("--cache-from", "--cache-to"):
        if flag in options:
            target[flag[2:]] = options.pop(flag)
    if options.pop("--no-cache", None) is not None:
        target["no-cache"] = True
    # Not target fields: how progress prints, where the image goes (bake's own --load or --push), and the
    # local engine's network for RUN steps (plan.BUILD_NETWORK: a remote BuildKit chooses its own).
    assert set(options) <= {"--progress", "--secret", "--load", "--network"}, options
    return target


def _ca_source(command: list[str]) -> str | None:
    secrets = _options(command)[0].get("--secret", [])
    assert len(secrets) <= 1 and all(item.startswith("id=ca,src=") for item in secrets)
    return secrets[0].removeprefix("id=ca,src=") if secrets else None


def _required_dockerfile_args() -> set[str]:
    return passed_args(DOCKERFILE, with_defaults=False)


def _labels_written_out(variant: Variant, source: SourceInfo) -> dict[str, str]:
    """The labels a build of `variant` carries, spelled out here rather than taken from build_labels."""
    toolkits = ",".join(f"{toolkit.version}={toolkit.image}" for toolkit in variant.toolkits)
    labels = {
        f"{OCI}.title": f"PyTorch Universal Dev ({variant.name})",
        f"{OCI}.description": (f"PyTorch {variant.torch} (CUDA {variant.cuda}) with CUDA toolkits "
                               f"{' + '.join(variant.toolkit_versions)}, JupyterLab and zsh"),
        f"{OCI}.version": f"{variant.torch}-{variant.name}", f"{OCI}.revision": source.revision,
        f"{OCI}.created": source.created, f"{OCI}.licenses": "MIT", f"{OCI}.base.name": variant.base_image,
        f"{PUDEV}.variant": variant.name, f"{PUDEV}.torch": variant.torch, f"{PUDEV}.cuda": variant.cuda,
        f"{PUDEV}.python": variant.python, f"{PUDEV}.image": variant.image, f"{PUDEV}.mirror": variant.mirror,
        f"{PUDEV}.toolkits": toolkits, f"{PUDEV}.default-toolkit": variant.default_toolkit,
        f"{PUDEV}.required-tests": ",".join(variant.required_tests),
        f"{PUDEV}.latest": "true" if variant.latest else "false", f"{PUDEV}.platforms": ",".join(variant.platforms),
    }
    return {**labels, f"{OCI}.source": source.url} if source.url else labels


def test_each_bake_target_is_the_build_of_its_variant(case: Case, registry: FakeRegistry,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    bake = _bake(case.flags, capsys)
    source = source_info()
    assert bake["group"]["default"]["targets"] == [variant.name for variant in case.variants]
    assert set(bake["target"]) == {variant.name for variant in case.variants}
    for variant in case.variants:
        expected = {image.reference: _expected_identity(image.reference, registry) for image in input_images(variant)}
        # The command `pudev build` runs, once it knows the same images, read back field by field.
        (plan,) = identify(plan_builds([variant], case.options, profile=case.selection.profile), [expected.get])
        command = plan.docker_args()
        target, built = bake["target"][variant.name], _as_bake_target(command)
        assert sorted(target) == sorted(built), variant.name
        for name, value in built.items():  # args, labels, tags, target, dockerfile, context, secret, cache
            assert target[name] == value, f"{variant.name}: {name}"
        assert bake.get("variable", {}).get(CA_VARIABLE, {}).get("default") == _ca_source(command)
        # And what that build must carry, stated without the plan: every input by its identity.
        args, labels = target["args"], target["labels"]
        assert set(args) == _required_dockerfile_args()
        record = json.loads(args[RECORD_ARG])
        for image in input_images(variant):
            assert record["inputs"][image.key] == {"source": image.reference,
                                                   "digest": expected[image.reference].pin}, image.key
        lock = requirement_locks.lock_path(variant)
        assert record["inputs"]["lock"] == {"source": f"requirements/lock/{lock.name}",
                                            "digest": f"sha256:{hashlib.sha256(lock.read_bytes()).hexdigest()}"}
        assert record["revision"] == labels[f"{OCI}.revision"] == source.revision
        base = expected[variant.base_image]
        base_labels = {f"{OCI}.base.digest": base.digest, f"{PUDEV}.base.id": base.image_id}
        assert labels == {**_labels_written_out(variant, source), **{k: v for k, v in base_labels.items() if v}}
        assert labels[f"{PUDEV}.variant"] == record["variant"] == variant.name  # what `pudev test REF@...` reads
        # The engine keeps one platform per tag: an arm64 build's tag says so.
        suffix = "" if variant.platform == "linux/amd64" else "-" + variant.platform.split("/")[1]
        assert target["tags"] == [f"{variant.image}:{variant.name}{suffix}"]
        assert target["platforms"] == [variant.platform]


def _synthetic_bake(matrix_file: WriteMatrix, lock_folder: Path, data: dict[str, Any] | None = None) -> list[str]:
    """`pudev bake` of the synthetic matrix (its lock is in `lock_folder`)."""
    return ["bake", "--out", "-", "--no-ca-bundle", "--variants-file", str(matrix_file(data))]


def _never(reference: str) -> tuple[str, str]:
    raise AssertionError(f"the engine was asked about {reference}")


def test_a_pinned_image_is_taken_as_pinned_without_asking(matrix_file: WriteMatrix, lock_folder: Path,
                                                         registry: FakeRegistry, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = pinned()
    monkeypatch.setattr(images, "identity", _never)
    assert main(_synthetic_bake(matrix_file, lock_folder, data)) == 0
    target = json.loads(capsys.readouterr().out)["target"]["cu130"]
    base = data["variants"]["cu130"]["base_image"]
    digest = json.loads(target["args"][RECORD_ARG])["inputs"]["base"]["digest"]
    assert digest == target["labels"][f"{OCI}.base.digest"] == base.split("@")[1]
    assert registry.asked == []


def test_this_engine_answers_before_the_registry_and_each_image_is_asked_once(
        matrix_file: WriteMatrix, lock_folder: Path, registry: FakeRegistry, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    base = synthetic()["variants"]["cu130"]["base_image"]
    pulled = ("sha256:" + "d" * 64, "sha256:" + "e" * 64)
    monkeypatch.setattr(images, "identity", lambda ref: pulled if ref == base else ("", ""))
    assert main(_synthetic_bake(matrix_file, lock_folder)) == 0
    target = json.loads(capsys.readouterr().out)["target"]["cu130"]
    assert json.loads(target["args"][RECORD_ARG])["inputs"]["base"]["digest"] == pulled[0]
    assert target["labels"][f"{PUDEV}.base.id"] == pulled[1]  # the local id, as pudev build labels it
    assert not any("torch" in asked for asked in registry.asked if "cu13.0" in asked)
    assert len(registry.asked) == len(set(registry.asked)) == 3  # cu129's base and the two shared toolkits


@pytest.mark.parametrize("failure", ["no such tag", "registry down"])
def test_an_image_nothing_can_name_is_one_error_with_the_fix(failure: str, matrix_file: WriteMatrix,
                                                            lock_folder: Path, registry: FakeRegistry,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    data = pinned()
    unpinned = "example.com/torch:3.1.0-cuda12.9"
    data["variants"]["cu129"]["base_image"] = unpinned
    registry.missing.add(unpinned)
    registry.down = failure == "registry down"
    assert main(_synthetic_bake(matrix_file, lock_folder, data)) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    line = captured.err.strip()
    assert line.startswith(f"pudev: error: cannot resolve the digest of {unpinned}: ")
    assert ("example.com has no such tag" if failure == "no such tag" else "does not answer") in line
    assert line.endswith(f"run `pudev pin` on a machine that reaches the registry, or pull it "
                         f"(`docker pull {unpinned}`)")


def test_today_bake_without_a_registry_names_the_first_image(capsys: pytest.CaptureFixture[str]) -> None:
    """Offline (the unit tests' default), today's unpinned matrix cannot be baked: one line says why."""
    assert main(["bake", "--out", "-", "--no-ca-bundle"]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "cannot resolve the digest of " in line and "pudev pin" in line


def test_a_target_never_holds_a_placeholder(matrix_file: WriteMatrix, lock_folder: Path) -> None:
    """A plan that still lacks a digest is no bake target (nothing fills it in where bake runs); one
    that lacks only the base's local id is, without that label."""
    variant = load_matrix(matrix_file(pinned())).get("cu130")
    (plan,) = plan_builds([variant], NO_CA)
    unresolved = "BASE_DIGEST, TOOLKIT_A_DIGEST, TOOLKIT_B_DIGEST not resolved"
    with pytest.raises(PudevError, match=rf"^example/dev-image:cu130: {unresolved}"):
        bake_target(plan.spec())
    target = bake_target(identify([plan], [digests.pinned]).pop().spec())
    assert "<" not in json.dumps(target) and f"{PUDEV}.base.id" not in target["labels"]
    assert target["labels"][f"{OCI}.base.digest"] == variant.base_image.split("@")[1]


def test_the_file_is_written_with_the_command_that_builds_it(case: Case, registry: FakeRegistry, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """buildx 0.20 and later refuse a bake file that reads a file outside the working folder unless the command
    allows it: a CA bundle is allowed by name in the printed command, and without one no file is read at all."""
    out = tmp_path / "docker-bake.json"
    assert main(["bake", *case.flags, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    document = json.loads(out.read_text())
    command = bake_command(str(out), document)
    assert printed.strip().endswith(shlex.join(command)), printed
    if case.options.ca_bundle is None:
        assert "variable" not in document
        assert all("secret" not in target for target in document["target"].values())
        assert not any(item.startswith("--allow") for item in command)
    else:
        assert f"--allow=fs.read={case.options.ca_bundle}" in command
        assert all(target["secret"] == [CA_SECRET] for target in document["target"].values())
