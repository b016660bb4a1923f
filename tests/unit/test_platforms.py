"""Platforms in the matrix, on synthetic variant files: every (variant, platform) build is made and
checked when the file loads; a variant's `on."linux/arm64"` table changes that platform's build alone;
a platform a toolkit does not carry, an on-table for a platform the variant does not declare, or an
arch list that platform's nvcc cannot compile fail at load, naming the file and the fix. Then how a
platform is chosen (--platform, --set platforms, a profile's per-platform table) and what the build plan of
another platform's build says (its tag suffix, --platform, the base's kind and torch index). Last,
the emulator check on a fake binfmt_misc folder: what it accepts, what it refuses, and the one line
a foreign build without an emulator fails with."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from matrices import WriteMatrix, synthetic

from pudev.building import plan as plan_module
from pudev.building.labels import SourceInfo
from pudev.building.plan import BuildPlan, build_args, local_tag
from pudev.common.errors import PudevError
from pudev.config import loader, profiles
from pudev.config.loader import load_matrix, read_variant_file
from pudev.config.model import Variant
from pudev.config.overrides import Override, parse_assignments
from pudev.config.profiles import load_profile, standins_input
from pudev.config.selection import Selection, profile_builds, resolve
from pudev.engine import emulation
from pudev.engine.emulation import INSTALL_HINT, handler_problem, require_runnable
from pudev.engine.emulation import qemu_major as real_qemu_major  # the module's name is replaced per test

AMD64, ARM64 = "linux/amd64", "linux/arm64"
# What the synthetic arm64 build declares in its on-table: asserted as written, never as computed.
ARM_BASE = "example.com/cuda-runtime:13.0-ubuntu24.04"
ARM_INDEX = "https://download.example.com/whl/cu130"
ARM_ARCHS = {"12.9": "8.0;9.0", "13.0": "8.0;9.0;10.0;12.0+PTX"}
SOURCE = SourceInfo(revision="0" * 40, created="2026-01-01T00:00:00Z", url="")


def _host(monkeypatch: pytest.MonkeyPatch, platform: str) -> None:
    """This host's platform, as the loader (which build a plain command picks) and the plan see it."""
    monkeypatch.setattr(loader, "native_platform", lambda: platform)
    monkeypatch.setattr(plan_module, "native_platform", lambda: platform)


@pytest.fixture(autouse=True)
def amd64_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests hold on any host: each runs on an amd64 one unless it says otherwise."""
    _host(monkeypatch, AMD64)


def two_platforms() -> dict[str, Any]:
    """The synthetic matrix with cu130 also built for arm64, from a wheels base, with its own arch lists."""
    data = synthetic()
    for toolkit in data["toolkits"].values():
        toolkit["platforms"] = [AMD64, ARM64]
    cu130 = data["variants"]["cu130"]
    cu130["platforms"] = [AMD64, ARM64]
    cu130["on"] = {ARM64: {"base": "wheels", "base_image": ARM_BASE, "torch_index": ARM_INDEX,
                           "cuda_arch_list": dict(ARM_ARCHS)}}
    return data


def _changed(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    data = two_platforms()
    change(data)
    return data


def _load_error(path: Path) -> str:
    with pytest.raises(PudevError) as caught:
        load_matrix(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path} (variant file, from --variants-file): ")
    return message


# -- the matrix --------------------------------------------------------------------------------------------


def test_every_variant_is_built_on_each_of_its_platforms(matrix_file: WriteMatrix) -> None:
    matrix = load_matrix(matrix_file(two_platforms()))
    assert [(build.name, build.platform) for build in matrix.every_build()] == [
        ("cu129", AMD64), ("cu130", AMD64), ("cu130", ARM64)]
    assert matrix.on("cu130", ARM64).platforms == matrix.on("cu130", AMD64).platforms == (AMD64, ARM64)
    assert matrix.on("cu129", AMD64).platforms == (AMD64,)


def test_the_on_table_changes_its_own_platform_only(matrix_file: WriteMatrix) -> None:
    data = two_platforms()
    declared = data["variants"]["cu130"]
    matrix = load_matrix(matrix_file(data))
    amd, arm = matrix.on("cu130", AMD64), matrix.on("cu130", ARM64)
    assert (arm.base, arm.base_image, arm.torch_index) == ("wheels", ARM_BASE, ARM_INDEX)
    assert {toolkit.version: toolkit.arch_list for toolkit in arm.toolkits} == ARM_ARCHS
    assert (amd.base, amd.base_image, amd.torch_index) == ("official", declared["base_image"], "")
    assert {toolkit.version: toolkit.arch_list for toolkit in amd.toolkits} == declared["cuda_arch_list"]
    # What the table does not name is shared.
    assert (arm.torch, arm.cuda, arm.python, arm.toolkit_versions) == (amd.torch, amd.cuda, amd.python,
                                                                        amd.toolkit_versions)


def test_a_plain_command_gets_the_hosts_build(matrix_file: WriteMatrix, monkeypatch: pytest.MonkeyPatch) -> None:
    path = matrix_file(two_platforms())
    assert load_matrix(path).get("cu130").platform == AMD64
    assert load_matrix(path).on("cu130", "").platform == AMD64
    _host(monkeypatch, ARM64)
    assert load_matrix(path).get("cu130").platform == ARM64
    assert load_matrix(path).get("cu129").platform == AMD64  # not built for this host: its first


def test_the_default_lock_of_an_arm64_build_is_its_own(matrix_file: WriteMatrix) -> None:
    data = two_platforms()
    data["variants"]["cu130"]["on"][ARM64]["python"] = "3.11"
    matrix = load_matrix(matrix_file(data))
    assert matrix.on("cu130", AMD64).lock == "torch3.1.0-py3.12"
    assert matrix.on("cu130", ARM64).lock == "torch3.1.0-py3.11-arm64"
    assert matrix.on("cu130", ARM64).python == "3.11"


def test_a_declared_lock_in_the_on_table_is_kept(matrix_file: WriteMatrix) -> None:
    data = two_platforms()
    data["variants"]["cu130"]["on"][ARM64]["lock"] = "my-arm-lock"
    matrix = load_matrix(matrix_file(data))
    assert (matrix.on("cu130", AMD64).lock, matrix.on("cu130", ARM64).lock) == ("torch3.1.0-py3.12", "my-arm-lock")


def test_an_on_table_for_an_undeclared_platform_names_the_file_and_the_fix(matrix_file: WriteMatrix) -> None:
    data = _changed(lambda d: d["variants"]["cu129"].update(on={ARM64: {"base_image": ARM_BASE}}))
    message = _load_error(matrix_file(data))
    assert "variant cu129" in message and f'on."{ARM64}"' in message
    assert "add it to `platforms` or drop the table" in message


def test_an_unknown_field_in_an_on_table_is_refused(matrix_file: WriteMatrix) -> None:
    message = _load_error(matrix_file(_changed(lambda d: d["variants"]["cu130"]["on"][ARM64].update(torch="9.9.9"))))
    assert f"variant cu130: on {ARM64}: unknown field 'torch'" in message


def test_a_toolkit_without_the_platform_fails_at_load(matrix_file: WriteMatrix) -> None:
    data = _changed(lambda d: d["toolkits"]["12.9"].pop("platforms"))  # linux/amd64 only, as by default
    message = _load_error(matrix_file(data))
    assert "toolkit 12.9" in message and f"for {AMD64} only" in message
    assert f'list {ARM64} in [toolkits."12.9"] platforms' in message


def test_an_unknown_platform_in_platforms_is_refused(matrix_file: WriteMatrix) -> None:
    message = _load_error(matrix_file(_changed(lambda d: d["variants"]["cu130"].update(
        platforms=[AMD64, "linux/s390x"]))))
    assert "field 'platforms'" in message and "linux/s390x" in message


@pytest.mark.parametrize("platform", [AMD64, ARM64])
def test_an_arch_list_nvcc_cannot_compile_fails_on_each_platform(matrix_file: WriteMatrix, platform: str) -> None:
    # 12.9's nvcc covers up to 12.0 (synthetic max_arch): 12.1 in that platform's list is refused.
    data = two_platforms()
    cu130 = data["variants"]["cu130"]
    bad = {"12.9": "8.0;12.1", "13.0": "8.0;9.0"}
    if platform == ARM64:
        cu130["on"][ARM64]["cuda_arch_list"] = bad
    else:
        cu130["cuda_arch_list"] = bad
    message = _load_error(matrix_file(data))
    assert "arch 12.1 cannot be compiled by CUDA 12.9" in message


def test_the_arm64_arch_list_is_checked_though_amd64_is_fine(matrix_file: WriteMatrix) -> None:
    # 13.0's nvcc covers up to 12.1 (synthetic max_arch); the amd64 list stays within it.
    data = two_platforms()
    data["variants"]["cu130"]["on"][ARM64]["cuda_arch_list"] = {"12.9": "8.0;9.0", "13.0": "8.0;13.0"}
    assert "arch 13.0 cannot be compiled by CUDA 13.0" in _load_error(matrix_file(data))
    del data["variants"]["cu130"]["on"][ARM64]["cuda_arch_list"]  # arm64 then takes the shared list
    matrix = load_matrix(matrix_file(data))
    assert matrix.on("cu130", ARM64).default.arch_list == data["variants"]["cu130"]["cuda_arch_list"]["13.0"]


@pytest.mark.parametrize("platform", ["linux/s390x", ARM64])
def test_a_platform_a_variant_is_not_built_for_names_the_valid_ones(matrix_file: WriteMatrix,
                                                                      platform: str) -> None:
    matrix = load_matrix(matrix_file(two_platforms()))
    with pytest.raises(PudevError) as caught:
        matrix.on("cu129", platform)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"--platform {platform}: variant cu129 is built for {AMD64} only")
    if platform == ARM64:  # a platform pudev builds: the fix may be to declare it
        assert "variants.toml" in message and "`platforms`" in message
    else:  # one it never builds: no such advice
        assert "variants.toml" not in message and f"pudev builds {AMD64} and {ARM64}" in message
    with pytest.raises(PudevError, match=f"^profile x: platform {platform}: variant cu129"):
        matrix.on("cu129", platform, source="profile x: platform")


def test_a_platform_on_an_unknown_variant_lists_the_variants(matrix_file: WriteMatrix) -> None:
    with pytest.raises(PudevError, match="unknown variant 'cu999': valid variants are cu129, cu130"):
        load_matrix(matrix_file(two_platforms())).on("cu999", ARM64)


# -- choosing a platform -----------------------------------------------------------------------------------


def test_resolve_with_a_platform_gives_that_build(matrix_file: WriteMatrix) -> None:
    path = matrix_file(two_platforms())
    (arm,) = resolve(Selection(names=("cu130",), variants_file=path, platform=ARM64)).variants
    assert (arm.name, arm.platform, arm.base_image) == ("cu130", ARM64, ARM_BASE)
    (amd,) = resolve(Selection(names=("cu130",), variants_file=path)).variants
    assert amd.platform == AMD64
    with pytest.raises(PudevError, match=f"^--platform {ARM64}: variant cu129 is built for {AMD64} only"):
        resolve(Selection(names=("cu130", "cu129"), variants_file=path, platform=ARM64))


def test_overrides_with_a_platform_build_that_platform_alone(matrix_file: WriteMatrix) -> None:
    variant_file = read_variant_file(matrix_file(two_platforms()))
    overrides = {"cu130": [Override("torch", "3.2.0", "--set torch=3.2.0")]}
    on_arm = variant_file.with_overrides(overrides, ARM64)
    assert list(on_arm.builds["cu130"]) == [ARM64]
    assert on_arm.on("cu130", ARM64).torch == "3.2.0"
    assert on_arm.on("cu130", ARM64).base_image == ARM_BASE  # the on-table still applies
    assert on_arm.on("cu129", AMD64).torch == "3.1.0"  # a variant no override names keeps every build
    with pytest.raises(PudevError, match=f"^--platform {AMD64}: variant cu130 is built for {ARM64} only"):
        on_arm.on("cu130", AMD64)
    plain = variant_file.with_overrides(overrides)  # no platform: the host's build
    assert list(plain.builds["cu130"]) == [AMD64] and plain.get("cu130").torch == "3.2.0"


def test_an_override_wins_over_the_on_table(matrix_file: WriteMatrix) -> None:
    variant_file = read_variant_file(matrix_file(two_platforms()))
    overridden = variant_file.with_overrides(
        {"cu130": [Override("base_image", "example.com/mine:1", "--base-image example.com/mine:1")]}, ARM64)
    assert overridden.on("cu130", ARM64).base_image == "example.com/mine:1"
    assert overridden.on("cu130", ARM64).base == "wheels"


def test_overrides_for_an_undeclared_platform_fail_before_building(matrix_file: WriteMatrix) -> None:
    variant_file = read_variant_file(matrix_file(two_platforms()))
    with pytest.raises(PudevError, match=f"^--platform {ARM64}: variant cu129 is built for {AMD64} only"):
        variant_file.with_overrides({"cu129": [Override("torch", "3.2.0", "--set torch=3.2.0")]}, ARM64)


@pytest.mark.parametrize(("assignment", "value"), [
    ("platforms=linux/amd64,linux/arm64", [AMD64, ARM64]),
    ("platforms= linux/arm64 ,", [ARM64]),
    ("toolkit.13.0.platforms=linux/amd64,linux/arm64", [AMD64, ARM64]),
])
def test_set_platforms_takes_a_comma_separated_list(assignment: str, value: list[str]) -> None:
    (override,) = parse_assignments([assignment])
    assert override.value == value
    assert override.source == f"--set {assignment}"


def test_set_platforms_picks_the_build_and_a_bad_one_names_the_flag(matrix_file: WriteMatrix) -> None:
    path = matrix_file(two_platforms())
    flags = tuple(parse_assignments([f"platforms={ARM64}"]))
    (arm,) = resolve(Selection(names=("cu129",), variants_file=path, overrides=flags)).variants
    assert (arm.name, arm.platform, arm.platforms) == ("cu129", ARM64, (ARM64,))
    bad = tuple(parse_assignments(["platforms=linux/s390x"]))
    with pytest.raises(PudevError) as caught:
        resolve(Selection(names=("cu129",), variants_file=path, overrides=bad))
    message = str(caught.value)
    assert message.startswith("--set platforms=linux/s390x: ") and "field 'platforms'" in message
    assert f"(variant cu129 of {path})" in message


def test_set_platforms_and_platform_together(matrix_file: WriteMatrix) -> None:
    path = matrix_file(two_platforms())
    flags = tuple(parse_assignments([f"platforms={AMD64},{ARM64}"]))
    (arm,) = resolve(Selection(names=("cu129",), variants_file=path, overrides=flags, platform=ARM64)).variants
    assert arm.platform == ARM64


# -- profiles ----------------------------------------------------------------------------------------------

ARM_STANDIN = "example.com/arm-standin:1"
STANDINS = f"""\
[profiles.both]
variant = "cu130"
torch = "3.2.0"

[profiles.both.on."{ARM64}"]
base_image = "{ARM_STANDIN}"

[profiles.old]
variant = "cu129"
torch = "3.2.0"
"""


@pytest.fixture
def standins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, matrix_file: WriteMatrix) -> Path:
    """A stand-in file with a two-platform profile and an amd64-only one, over the two-platform matrix
    (both in place of the checkout's own files)."""
    path = tmp_path / "standins.toml"
    path.write_text(STANDINS)
    monkeypatch.setattr(profiles, "STANDINS_FILE", path)
    monkeypatch.setattr(loader, "VARIANTS_FILE", matrix_file(two_platforms()))
    return path


def test_a_profiles_on_table_changes_one_platform(standins: Path) -> None:
    profile = load_profile("both")
    assert profile.variant == "cu130"
    assert [(o.key, o.value, o.platform, o.source) for o in profile.overrides] == [
        ("torch", "3.2.0", "", "profile both (standins.toml)"),
        ("base_image", ARM_STANDIN, ARM64, f"profile both on {ARM64} (standins.toml)")]


def test_a_profile_on_table_for_an_unknown_platform_is_refused(standins: Path) -> None:
    standins.write_text('[profiles.odd]\nvariant = "cu130"\n\n[profiles.odd.on."linux/s390x"]\ntorch = "3.2.0"\n')
    with pytest.raises(PudevError) as caught:
        load_profile("odd", standins_input())
    message = str(caught.value)
    assert message.startswith(f"{standins} (stand-in file, from --profile): profile odd: ")
    assert "linux/s390x" in message and ARM64 in message and "\n" not in message


def test_a_profile_builds_every_platform_of_its_variant(standins: Path) -> None:
    builds = {build.platform: build for build in profile_builds("both")}
    assert sorted(builds) == [AMD64, ARM64]
    assert builds[ARM64].torch == builds[AMD64].torch == "3.2.0"
    assert (builds[ARM64].base_image, builds[ARM64].base) == (ARM_STANDIN, "wheels")  # the on-table still counts
    assert builds[AMD64].base_image == synthetic()["variants"]["cu130"]["base_image"]
    (arm,) = resolve(Selection(profile="both", platform=ARM64)).variants
    assert (arm.platform, arm.base_image) == (ARM64, ARM_STANDIN)
    assert [build.platform for build in profile_builds("old")] == [AMD64]


def test_a_profile_on_a_platform_its_variant_lacks_fails(standins: Path) -> None:
    with pytest.raises(PudevError, match=f"^--platform {ARM64}: variant cu129 is built for {AMD64} only"):
        resolve(Selection(profile="old", platform=ARM64))


def test_a_platforms_override_changes_that_platforms_build_alone(matrix_file: WriteMatrix) -> None:
    variant_file = read_variant_file(matrix_file(two_platforms()))
    change = Override("torch", "3.2.0", "profile p on linux/arm64", ARM64)
    matrix = variant_file.with_overrides({"cu130": [change]}, every_platform=True)
    assert (matrix.on("cu130", AMD64).torch, matrix.on("cu130", ARM64).torch) == ("3.1.0", "3.2.0")


# -- the build plan ----------------------------------------------------------------------------------------


def _builds(path: Path) -> tuple[Variant, Variant]:
    matrix = load_matrix(path)
    return matrix.on("cu130", AMD64), matrix.on("cu130", ARM64)


def _args(variant: Variant) -> list[str]:
    return BuildPlan(variant, source=SOURCE, lock_sha256="f" * 64).docker_args()


def test_an_arm64_build_has_its_own_local_tag(matrix_file: WriteMatrix) -> None:
    amd, arm = _builds(matrix_file(two_platforms()))
    assert local_tag(amd) == "example/dev-image:cu130"
    assert local_tag(arm) == "example/dev-image:cu130-arm64"
    args = _args(arm)
    assert args[args.index("--tag") + 1] == "example/dev-image:cu130-arm64"


@pytest.mark.parametrize("host", [AMD64, ARM64])
def test_platform_is_passed_only_for_a_foreign_build(matrix_file: WriteMatrix, monkeypatch: pytest.MonkeyPatch,
                                                     host: str) -> None:
    builds = _builds(matrix_file(two_platforms()))
    _host(monkeypatch, host)
    for build in builds:
        args = _args(build)
        if build.platform == host:
            assert "--platform" not in args
        else:
            assert args[args.index("--platform") + 1] == build.platform


def test_build_args_carry_the_base_kind_and_torch_index(matrix_file: WriteMatrix) -> None:
    amd, arm = _builds(matrix_file(two_platforms()))
    assert (build_args(arm)["BASE_KIND"], build_args(arm)["TORCH_INDEX"]) == ("wheels", ARM_INDEX)
    assert build_args(arm)["BASE_IMAGE"] == ARM_BASE
    assert build_args(arm)["CUDA_ARCH_LIST"] == ARM_ARCHS["13.0"]
    assert build_args(arm)["LOCK"] == "torch3.1.0-py3.12-arm64.txt"
    assert (build_args(amd)["BASE_KIND"], build_args(amd)["TORCH_INDEX"]) == ("official", "")
    args = _args(arm)
    assert "BASE_KIND=wheels" in args and f"TORCH_INDEX={ARM_INDEX}" in args


# -- emulation ---------------------------------------------------------------------------------------------

AARCH64_MAGIC = "7f454c460201010000000000000000000200b700"
AARCH64_MASK = "ffffffffffffff00fffffffffffffffffeffffff"


def _entry(state: str = "enabled", flags: str = "PF", magic: str = AARCH64_MAGIC) -> str:
    return (f"{state}\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: {flags}\noffset 0\n"
            f"magic {magic}\nmask {AARCH64_MASK}\n")


@pytest.fixture
def binfmt(tmp_path: Path) -> Path:
    """A mounted binfmt_misc with no handler yet."""
    folder = tmp_path / "binfmt_misc"
    folder.mkdir()
    (folder / "status").write_text("enabled\n")
    (folder / "register").write_text("")
    return folder


def test_an_enabled_handler_with_the_f_flag_runs_arm64(binfmt: Path) -> None:
    (binfmt / "qemu-aarch64").write_text(_entry())
    assert handler_problem(ARM64, binfmt) == ""


def test_a_disabled_handler_does_not_count(binfmt: Path) -> None:
    (binfmt / "qemu-aarch64").write_text(_entry(state="disabled"))
    assert handler_problem(ARM64, binfmt) == f"no binfmt handler runs {ARM64} programs"


def test_a_handler_without_the_f_flag_says_so(binfmt: Path) -> None:
    (binfmt / "qemu-aarch64").write_text(_entry(flags="OC"))
    problem = handler_problem(ARM64, binfmt)
    assert "F flag" in problem and ARM64 in problem


def test_a_handler_for_another_machine_does_not_count(binfmt: Path) -> None:
    # x86-64's e_machine (3e00) where aarch64's would be: a handler, but not for arm64.
    (binfmt / "qemu-x86_64").write_text(_entry(magic=AARCH64_MAGIC.replace("b700", "3e00")))
    assert handler_problem(ARM64, binfmt) == f"no binfmt handler runs {ARM64} programs"
    assert handler_problem(AMD64, binfmt) == ""


def test_no_handler(binfmt: Path) -> None:
    assert handler_problem(ARM64, binfmt) == f"no binfmt handler runs {ARM64} programs"


def test_binfmt_misc_not_mounted(tmp_path: Path) -> None:
    folder = tmp_path / "binfmt_misc"
    folder.mkdir()
    (folder / "qemu-aarch64").write_text(_entry())  # an entry without status: not the kernel's folder
    assert handler_problem(ARM64, folder) == f"binfmt_misc is not mounted at {folder}"


def test_binfmt_misc_switched_off_as_a_whole(binfmt: Path) -> None:
    (binfmt / "qemu-aarch64").write_text(_entry())
    (binfmt / "status").write_text("disabled\n")
    assert handler_problem(ARM64, binfmt) == f"binfmt_misc is disabled ({binfmt / 'status'} says disabled)"


def test_a_platform_with_no_known_emulator() -> None:
    assert "linux/s390x" in handler_problem("linux/s390x", Path("/nonexistent"))


def test_require_runnable_fails_in_one_line_naming_the_command_and_the_fix(
        binfmt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emulation, "native_platform", lambda: AMD64)
    with pytest.raises(PudevError) as caught:
        require_runnable(ARM64, "pudev build cu130", binfmt_dir=binfmt)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"pudev build cu130 for {ARM64} on this {AMD64} host: ")
    assert message.endswith(INSTALL_HINT)
    assert "apt-get install qemu-user-static binfmt-support" in message
    (binfmt / "qemu-aarch64").write_text(_entry())
    require_runnable(ARM64, "pudev build cu130", binfmt_dir=binfmt)


def test_require_runnable_passes_the_native_platform_without_an_emulator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emulation, "native_platform", lambda: ARM64)
    require_runnable(ARM64, "pudev test cu130", binfmt_dir=tmp_path / "not-mounted")
    with pytest.raises(PudevError, match=f"^pudev test cu130 for {AMD64} on this {ARM64} host: binfmt_misc is not"):
        require_runnable(AMD64, "pudev test cu130", binfmt_dir=tmp_path / "not-mounted")


@pytest.fixture(autouse=True)
def _a_new_enough_qemu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake handlers name an interpreter path; what version it reports is this test file's choice."""
    monkeypatch.setattr(emulation, "qemu_major", lambda interpreter: 10)


@pytest.mark.parametrize(("major", "fine"), [(7, False), (8, False), (9, True), (10, True), (None, True)])
def test_a_qemu_too_old_for_torch_is_named_with_the_fix(binfmt: Path, major: int | None, fine: bool) -> None:
    """qemu 7.2 (Debian 12's) crashes importing torch's aarch64 build: that handler does not count. An
    interpreter that is not qemu, or does not say its version, is trusted."""
    (binfmt / "qemu-aarch64").write_text(_entry())
    problem = handler_problem(ARM64, binfmt, version_of=lambda interpreter: major)
    if fine:
        assert problem == ""
    else:
        assert problem.startswith(f"its emulator is qemu {major},") and "host-setup.sh" in problem


def test_the_version_is_asked_of_the_program_a_debian_link_names(tmp_path: Path) -> None:
    """Debian registers aarch64-binfmt-P, a link that refuses `--version`; the program it points at answers."""
    program = tmp_path / "qemu-aarch64-static"
    program.write_text("#!/bin/sh\necho 'qemu-aarch64 version 7.2.22 (Debian 1:7.2+dfsg-7)'\n")
    program.chmod(0o755)
    link = tmp_path / "aarch64-binfmt-P"
    link.symlink_to(program)
    assert real_qemu_major(str(link)) == 7
    not_qemu = tmp_path / "other"
    not_qemu.write_text("#!/bin/sh\necho 'box64 version 0.3.2'\n")
    not_qemu.chmod(0o755)
    assert real_qemu_major(str(not_qemu)) is None
