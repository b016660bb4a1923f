"""The image record is the plan's one contract with the build: every field of the
variant and its toolkits reaches the build in IMAGE_RECORD under its own name, and
the record step (pudev.image.record, run here on the host) keeps every planned key
and adds what only the build knows, in the schema the in-image suite reads."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from matrices import WriteMatrix

from pudev.building.input_images import ImageIdentity, input_images
from pudev.building.labels import SourceInfo, build_labels
from pudev.building.matrix import _variant_fields as _ci_columns
from pudev.building.plan import BuildPlan, build_args
from pudev.building.record import RECORD_ARG
from pudev.common.errors import PudevError
from pudev.common.variant import declared as declared_field
from pudev.common.variant import every_contract
from pudev.config.loader import load_matrix
from pudev.config.model import Toolkit, Variant
from pudev.config.profiles import profile_names
from pudev.config.schema import variant_keys
from pudev.config.selection import profile_builds
from pudev.image import record as image_record
from pudev.image.compilers import masquerade
from pudev.paths import DOCKERFILE, VARIANTS_FILE

SOURCE = SourceInfo(revision="1" * 40, created="2026-01-01T00:00:00Z", url="")
# The keys the in-image suite and tools have always read (tests/image, cuda-switch, verify, inventory).
TOOL_KEYS = {"variant", "image", "torch", "cuda", "python", "default_toolkit", "cuda_arch_list", "cxx_standard",
             "mirror", "build_mirror", "user", "toolkits", "inputs", "revision", "packages", "base_packages"}
TOOLKIT_KEYS = {"version", "path", "max_gcc", "host_compiler", "arch_list"}


def _variants(matrix_file: WriteMatrix) -> list[Variant]:
    """The synthetic matrix's variants, today's, and each profile's."""
    found = load_matrix(matrix_file()).every_build() + load_matrix(VARIANTS_FILE).every_build()
    return found + [build for name in profile_names() for build in profile_builds(name)]


def _identified(variant: Variant) -> BuildPlan:
    """A plan whose input images are all known (as `pudev build` has them, once pulled)."""
    images = {image.reference: ImageIdentity(digest="sha256:" + f"{n}" * 64, image_id="sha256:" + "e" * 64)
              for n, image in enumerate(input_images(variant))}
    return BuildPlan(variant, source=SOURCE, lock_sha256="f" * 64, images=images)


def _planned(plan: BuildPlan) -> dict[str, Any]:
    """IMAGE_RECORD as the docker command carries it."""
    args = plan.docker_args()
    (value,) = [arg.split("=", 1)[1] for arg in args if arg.startswith(f"{RECORD_ARG}=")]
    planned: dict[str, Any] = json.loads(value)
    return planned


def _as_json(value: object) -> Any:
    return json.loads(json.dumps(value))


def _assert_every_field_recorded(variant: Variant, planned: dict[str, Any]) -> None:
    """Each model field, iterated (so a field added later is checked too), under its own name."""
    for field in dataclasses.fields(variant):
        key = "variant" if field.name == "name" else field.name
        if field.name == "toolkits":
            continue
        assert planned[key] == _as_json(getattr(variant, field.name)), (variant.name, field.name)
    assert len(planned["toolkits"]) == len(variant.toolkits)
    for toolkit, recorded in zip(variant.toolkits, planned["toolkits"], strict=True):
        for field in dataclasses.fields(Toolkit):
            assert recorded[field.name] == _as_json(getattr(toolkit, field.name)), (toolkit.version, field.name)


def test_every_model_field_reaches_the_build_in_the_record(matrix_file: WriteMatrix, lock_folder: Path) -> None:
    for variant in _variants(matrix_file):
        plan = _identified(variant)
        planned = _planned(plan)
        _assert_every_field_recorded(variant, planned)
        assert planned == _as_json(plan.record())
        # What the record derives from the fields: nothing the host knows is left to the build.
        assert planned["default_toolkit"] == variant.default_toolkit
        assert planned["cuda_arch_list"] == variant.default.arch_list
        assert planned["revision"] == SOURCE.revision
        assert set(planned["inputs"]) == {"base", "lock", *(f"toolkit {t.version}" for t in variant.toolkits)}


def _with_cudnn(declared: Variant) -> Variant:
    """cuDNN, say: one more field, declared once with its contract, as pudev.common.variant declares each."""
    contract = declared_field("9.9.0", toml="variant", build_arg="CUDNN_VERSION", label="cudnn", ci="cudnn",
                              column="cuDNN", pattern=r"\d+\.\d+\.\d+", expected="a cuDNN release")
    with_cudnn = dataclasses.make_dataclass("WithCudnn", [("cudnn", str, contract)], bases=(Variant,), frozen=True)
    variant: Variant = with_cudnn(**{field.name: getattr(declared, field.name)
                                     for field in dataclasses.fields(declared)})
    return variant


def test_a_field_declared_once_reaches_every_place_it_names(matrix_file: WriteMatrix, lock_folder: Path,
                                                            tmp_path: Path) -> None:
    """The field's contract alone takes it to the schema, the build arguments, the labels, the CI
    matrix, the table's columns and the record the image's own reader loads."""
    variant = _with_cudnn(load_matrix(matrix_file()).get("cu130"))
    model = type(variant)
    assert "cudnn" in variant_keys("variant", model) and "cudnn" not in variant_keys("shared", model)
    assert build_args(variant)["CUDNN_VERSION"] == "9.9.0"
    assert build_labels(variant, SOURCE)["org.pudev.cudnn"] == "9.9.0"
    assert _ci_columns(variant)["cudnn"] == "9.9.0"
    assert "cuDNN" in [contract.column for _, contract in every_contract(model)]
    planned = _planned(_identified(variant))
    _assert_every_field_recorded(variant, planned)
    assert planned["cudnn"] == "9.9.0"
    written = _write(planned, tmp_path)
    assert written["cudnn"] == "9.9.0"
    image_record.from_dict(written, model=model)  # the image's reader, told of the same model, loads it


def test_a_record_from_a_newer_pudev_is_refused_not_dropped(matrix_file: WriteMatrix, lock_folder: Path,
                                                           tmp_path: Path) -> None:
    """An image whose record has a field this pudev does not declare was built by a newer pudev."""
    written = _write(_planned(_identified(_with_cudnn(load_matrix(matrix_file()).get("cu130")))), tmp_path)
    with pytest.raises(PudevError, match=r"fields this pudev does not know \(cudnn\).*built by a newer pudev"):
        image_record.from_dict(written)
    written.pop("cudnn")
    written["toolkits"][0]["sm_count"] = 1
    with pytest.raises(PudevError, match=r"toolkit .*\(sm_count\)"):
        image_record.from_dict(written)
    written["toolkits"][0].pop("sm_count")
    assert image_record.from_dict(written).variant == "cu130"


def test_the_dockerfile_declares_each_build_argument_a_field_names() -> None:
    """Each field's ARG is in docker/Dockerfile, so a contract cannot name an argument the build ignores."""
    args = {line.split()[1].split("=")[0] for line in DOCKERFILE.read_text().splitlines() if line.startswith("ARG ")}
    named = {contract.build_arg for _, contract in every_contract() if contract.build_arg}
    assert named and named <= args, named - args


def _write(planned: dict[str, Any], tmp_path: Path, *, lock: str = "", shipped: str = "") -> dict[str, Any]:
    """The record step as docker/Dockerfile runs it, with the locks folder and base packages given."""
    locks, base = tmp_path / "locks", tmp_path / "base-packages.txt"
    locks.mkdir(exist_ok=True)
    if "lock" in planned.get("inputs", {}):
        (locks / Path(planned["inputs"]["lock"]["source"]).name).write_text(lock)
    base.write_text(shipped)
    path = tmp_path / "etc" / "image.json"
    assert image_record.main(["write", str(path), "--planned", json.dumps(planned), "--locks", str(locks),
                              "--base-packages", str(base), "--user", "dev"]) == 0
    written: dict[str, Any] = json.loads(path.read_text())
    return written


@pytest.mark.parametrize("variant", [build for name in profile_names() for build in profile_builds(name)],
                         ids=lambda build: f"{build.name}-{build.platform}")
def test_the_record_step_keeps_the_plan_and_adds_what_only_the_build_knows(
        variant: Variant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planned = _planned(_identified(variant))
    monkeypatch.setattr(image_record, "host_compiler_for", lambda max_gcc: f"g++-{max_gcc}")
    written = _write(planned, tmp_path, lock="numpy==2.1.0 \\\n    --hash=sha256:00\nrich==13.9.4\n",
                     shipped="numpy==1.26.4\n")
    assert {key: written[key] for key in planned if key != "toolkits"} == {
        key: value for key, value in planned.items() if key != "toolkits"}
    for toolkit, recorded in zip(planned["toolkits"], written["toolkits"], strict=True):
        assert recorded == {**toolkit, "path": f"/usr/local/cuda-{toolkit['version']}",
                            "host_compiler": f"g++-{toolkit['max_gcc']}"}
    assert (written["user"], written["packages"], written["base_packages"]) == (
        "dev", {"rich": "13.9.4"}, {"numpy": "1.26.4"})  # the base's numpy was left as it shipped
    # The schema the in-image suite reads: every key it has always had, each toolkit's too.
    assert set(written) >= TOOL_KEYS and all(set(t) >= TOOLKIT_KEYS for t in written["toolkits"])
    loaded = image_record.from_dict(written)
    assert (loaded.variant, loaded.toolkit(variant.default_toolkit).arch_list) == (
        variant.name, variant.default.arch_list)


def test_a_placeholder_nothing_filled_in_never_reaches_an_image(matrix_file: WriteMatrix, lock_folder: Path,
                                                               tmp_path: Path) -> None:
    """A plan printed before the images were pulled, run by hand as it is: the record step refuses it."""
    plan = BuildPlan(load_matrix(matrix_file()).get("cu130"), source=SOURCE, lock_sha256="f" * 64)
    with pytest.raises(SystemExit, match=r"input base has digest '<BASE_DIGEST>', not sha256:HEX"):
        _write(_planned(plan), tmp_path)


def test_the_record_asks_the_real_compiler_past_the_workshops_links(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The record step runs before the in-image tools are copied, and the compile workshop's g++ link
    needs them: the record asks the g++ behind the link (here the link fails, as it would then)."""
    links, real = tmp_path / "links", tmp_path / "real"
    for folder, body in ((links, "exit 1"), (real, "echo 12.2.0")):
        folder.mkdir()
        (folder / "g++").write_text(f"#!/bin/sh\n{body}\n")
        (folder / "g++").chmod(0o755)
    monkeypatch.setattr(masquerade, "MASQUERADE", str(links))
    monkeypatch.setenv("PATH", f"{links}:{real}")
    assert image_record.gcc_major() == 12
    assert (image_record.host_compiler_for(12), image_record.host_compiler_for(13)) == ("g++", "g++")
