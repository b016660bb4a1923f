"""Bad input on every command and flag, generated from the parser itself, so a new flag or command cannot
escape: an empty value, a flag given twice, flags that conflict, an output path holding someone else's file
(or a folder, a missing folder, a file that cannot be written), a PUDEV_* variable with a bad value, and an
engine that refuses everything. Each is one line naming the flag, file or variable, a non-zero exit, no
traceback, and nothing written or removed."""

from __future__ import annotations

import argparse
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import fails

from pudev.cli import main
from pudev.cli.arguments import KINDS, OutputPath
from pudev.cli.commands import HANDLERS
from pudev.cli.parser import build_parser
from pudev.common.environment import SETTINGS
from pudev.engine import docker
from pudev.paths import REPO_ROOT


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(HANDLERS, "pudev")
    (sub,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return dict(sub.choices)


COMMANDS = _commands()
VALUE_ACTIONS = (argparse._StoreAction, argparse._AppendAction)
ONCE_ACTIONS = (argparse._StoreAction, argparse._StoreConstAction)  # store_true is a store_const


def _options(kinds: tuple[type, ...]) -> list[tuple[str, argparse.Action]]:
    return [(name, action) for name, sub in COMMANDS.items() for action in sub._actions
            if action.option_strings and isinstance(action, kinds) and not isinstance(action, argparse._HelpAction)]


def _sample(action: argparse.Action, tmp_path: Path) -> list[str]:
    """A value the parser accepts for `action` (its type and count)."""
    if isinstance(action.type, OutputPath):
        return [str(tmp_path / "new-folder")] if action.type.folder else [str(tmp_path / "new-file")]
    one = "1" if action.type in (int, float) else "x"
    return [one] * (action.nargs if isinstance(action.nargs, int) else 1)


def _base(name: str, tmp_path: Path) -> list[str]:
    """The least a command's line needs to parse: its required positionals and options."""
    argv = [name]
    for action in COMMANDS[name]._actions:
        if _required(action):
            argv += [*action.option_strings[:1], *_sample(action, tmp_path)]
    return argv


def _required(action: argparse.Action) -> bool:
    # argparse marks a nargs="*" positional required, though it takes none.
    return action.required and action.nargs != "*" and not isinstance(action, argparse._HelpAction)


REFUSING_DOCKER = "#!/bin/sh\necho \"Error: this test's engine refuses every request\" >&2\nexit 1\n"


@pytest.fixture(autouse=True)
def refusing_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Whatever a case reaches, nothing real answers: a docker that refuses everything, no package index."""
    client = tmp_path / "bin" / "docker"
    client.parent.mkdir()
    client.write_text(REFUSING_DOCKER)
    client.chmod(client.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PUDEV_DOCKER", str(client))
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    docker.docker_cli.cache_clear()
    yield
    docker.docker_cli.cache_clear()


@pytest.mark.parametrize(("name", "action"), _options(VALUE_ACTIONS), ids=lambda item: getattr(item, "dest", item))
def test_an_empty_value_is_refused(name: str, action: argparse.Action, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    flag = action.option_strings[0]
    values = ["", *_sample(action, tmp_path)[1:]]
    line = fails([*_base(name, tmp_path), flag, *values], capsys)
    assert flag in line and "empty value" in line


POSITIONALS = [(name, action) for name, sub in COMMANDS.items() for action in sub._actions
               if not action.option_strings and not isinstance(action, argparse._SubParsersAction)]


@pytest.mark.parametrize(("name", "action"), POSITIONALS, ids=lambda item: getattr(item, "dest", item))
def test_an_empty_positional_is_refused(name: str, action: argparse.Action, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`pudev new-torch ""` once ran the whole move for "the newest"."""
    argv = [name, ""]  # argparse fills positionals in order: the first one gets the empty value
    for other in COMMANDS[name]._actions:
        if _required(other) and other is not action:
            argv += [*other.option_strings[:1], *_sample(other, tmp_path)]
    line = fails(argv, capsys)
    assert "empty value" in line


@pytest.mark.parametrize(("name", "action"), _options(ONCE_ACTIONS), ids=lambda item: getattr(item, "dest", item))
def test_a_flag_given_twice_is_refused(name: str, action: argparse.Action, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Never "the last one wins": `--out FILE --out -` once printed instead of writing."""
    flag = action.option_strings[0]
    once = [flag, *_sample(action, tmp_path)] if action.nargs != 0 else [flag]
    base = _base(name, tmp_path) + ([] if action.required else once)  # a required flag is in the base already
    line = fails([*base, *once], capsys)
    assert flag in line and "twice" in line


EXCLUSIVE = [(name, group) for name, sub in COMMANDS.items() for group in sub._mutually_exclusive_groups]


@pytest.mark.parametrize(("name", "group"), EXCLUSIVE, ids=lambda item: item if isinstance(item, str) else "group")
def test_conflicting_flags_are_refused(name: str, group: argparse._MutuallyExclusiveGroup, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`--ca-bundle X --no-ca-bundle`, `--check --dry-run`, `--push --fetch`: one or the other."""
    actions = group._group_actions
    for first in actions:
        for second in actions:
            if first is second:
                continue
            argv = [*_base(name, tmp_path)]
            for action in (first, second):
                argv += [action.option_strings[0], *(_sample(action, tmp_path) if action.nargs != 0 else [])]
            line = fails(argv, capsys)
            assert first.option_strings[0] in line and second.option_strings[0] in line


# The flags that set a variant field, and the --set that sets the same one (request.py's overrides).
SAME_FIELD = {"--base-image": "base_image=other:1", "--mirror": "mirror=tuna", "--build-mirror": "build_mirror=tuna",
              "--toolkit-image": "toolkit.12.4.image=other:1"}
SAME_FIELD_VALUES = {"--base-image": "one:1", "--mirror": "aliyun", "--build-mirror": "aliyun",
                     "--toolkit-image": "12.4=one:1"}


def test_every_field_flag_has_a_conflict_case() -> None:
    """A new `same as --set KEY=` flag needs a row above, or its conflict with --set goes untested."""
    flags = {action.option_strings[0] for _, action in _options(VALUE_ACTIONS)
             if "same as --set" in (action.help or "")}
    assert flags == set(SAME_FIELD)


SELECTING = sorted(name for name, sub in COMMANDS.items()
                   if any("--base-image" in action.option_strings for action in sub._actions))
NAMING = [name for name in SELECTING if any(action.dest == "names" for action in COMMANDS[name]._actions)]


@pytest.mark.parametrize("name", SELECTING)
@pytest.mark.parametrize("flag", sorted(SAME_FIELD))
def test_a_flag_and_a_set_of_the_same_field_are_refused(name: str, flag: str, capsys: pytest.CaptureFixture[str],
                                                        tmp_path: Path) -> None:
    line = fails([*_base(name, tmp_path), "--profile", "local", flag, SAME_FIELD_VALUES[flag], "--set",
                  SAME_FIELD[flag]], capsys)
    assert flag in line and f"--set {SAME_FIELD[flag]}" in line and "give it once" in line


@pytest.mark.parametrize("name", NAMING)
def test_a_profile_builds_its_own_variant_and_bases_only(name: str, capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    """`pudev build cu118 --profile local` once built "cu118" on cu121's stand-in base, and its record would
    have said CUDA 11.8; a flag that changes what the profile stands in with is refused the same way."""
    from pudev.config.profiles import load_profile

    profile = load_profile("local")
    other = next(variant for variant in _variant_names() if variant != profile.variant)
    line = fails([*_base(name, tmp_path), other, "--profile", "local"], capsys)
    assert "--profile local" in line and profile.variant in line
    base = next(override for override in profile.overrides if override.key == "base_image")
    line = fails([*_base(name, tmp_path), "--profile", "local", "--set", f"base_image={base.value}-not"], capsys)
    assert "--profile local sets base_image" in line


def _variant_names() -> list[str]:
    import tomllib

    from pudev.paths import VARIANTS_FILE

    return list(tomllib.loads(VARIANTS_FILE.read_text())["variants"])


OUTPUTS = [(name, action) for name, action in _options(VALUE_ACTIONS) if isinstance(action.type, OutputPath)]


def _foreign(tmp_path: Path) -> tuple[Path, bytes]:
    """Someone else's file: a copy of the README."""
    path = tmp_path / "someone-elses.md"
    shutil.copyfile(REPO_ROOT / "README.md", path)
    return path, path.read_bytes()


@pytest.mark.parametrize(("name", "action"), OUTPUTS, ids=lambda item: getattr(item, "dest", item))
def test_an_output_path_never_replaces_someone_elses_file(name: str, action: argparse.Action, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert isinstance(action.type, OutputPath)
    flag, path_type = action.option_strings[0], action.type
    foreign, before = _foreign(tmp_path)
    if path_type.folder:  # a folder flag: its files are checked before the first is written (cmd_manifest)
        line = fails([*_base(name, tmp_path), flag, str(foreign)], capsys)
        assert str(foreign) in line and "not a folder" in line
    else:
        line = fails([*_base(name, tmp_path), flag, str(foreign)], capsys)
        assert str(foreign) in line and KINDS[path_type.kind][0] in line
    assert foreign.read_bytes() == before


@pytest.mark.parametrize(("name", "action"), OUTPUTS, ids=lambda item: getattr(item, "dest", item))
def test_an_output_path_that_cannot_be_written_is_refused(name: str, action: argparse.Action, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert isinstance(action.type, OutputPath)
    flag, path_type = action.option_strings[0], action.type
    base = _base(name, tmp_path)
    if not path_type.folder:
        line = fails([*base, flag, str(tmp_path)], capsys)
        assert "a folder, not a file" in line
    if not path_type.makes_folders and not path_type.folder:
        line = fails([*base, flag, str(tmp_path / "no-such-folder" / "file")], capsys)
        assert "no folder" in line
    locked = tmp_path / "locked"
    locked.mkdir()
    if subprocess.run(["chattr", "+i", str(locked)], capture_output=True, check=False).returncode != 0:
        pytest.skip("this filesystem has no immutable attribute (chattr +i), the one thing root cannot write")
    try:
        line = fails([*base, flag, str(locked / "file")], capsys)
        assert "not writable" in line and flag in line
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)


@pytest.mark.parametrize(("name", "action"), [(n, a) for n, a in OUTPUTS if isinstance(a.default, str)
                                              and a.default not in ("", "-")],
                         ids=lambda item: getattr(item, "dest", item))
def test_a_default_output_path_is_checked_like_a_given_one(name: str, action: argparse.Action, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`pudev bake` in a folder that has someone else's docker-bake.json leaves it alone."""
    monkeypatch.chdir(tmp_path)
    default = Path(str(action.default))
    if isinstance(action.type, OutputPath) and action.type.folder:
        default.write_text("a file where the folder would go\n")
    else:
        shutil.copyfile(REPO_ROOT / "README.md", default)
    before = default.read_bytes()
    line = fails(_base(name, tmp_path), capsys)
    assert str(default) in line
    assert default.read_bytes() == before


def test_every_output_kind_is_used() -> None:
    assert {action.type.kind for _, action in OUTPUTS if isinstance(action.type, OutputPath)} == set(KINDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("variable", sorted(SETTINGS))
def test_a_bad_environment_value_is_refused_by_every_command(name: str, variable: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("abc", ""):
        monkeypatch.setenv(variable, bad)
        line = fails(_base(name, tmp_path), capsys)
        assert f"{variable}=" in line and "unset it" in line


# How each command is run against an engine that refuses everything: what it needs to get that far.
AGAINST_A_REFUSING_ENGINE = {
    "variants": [], "pick": [], "plan": ["all", "--no-ca-bundle"], "build": ["all", "--no-ca-bundle"], "test": ["all"],
    "jupyter": ["--profile", "local"], "tags": ["all"], "manifest": ["all"], "push": ["all", "--registry",
                                                                                       "127.0.0.1:9/x"],
    "promote": ["127.0.0.1:9/x-candidates@sha256:" + "0" * 64], "sbom": ["pudev-local/x:1"],
    "pin": [], "matrix": [],
    "bake": ["--out", "-", "--no-ca-bundle"], "changelog": ["pudev-local/x:1", "--out", "-"], "clean": [],
    "standins": ["--no-ca-bundle"], "profiles": [], "lock": ["--profile", "local"],
    "new-torch": ["--check", "--registry", "127.0.0.1:9", "--torch-index", "http://127.0.0.1:9/whl"],
}


def test_every_command_has_a_refusing_engine_case() -> None:
    assert set(AGAINST_A_REFUSING_ENGINE) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(AGAINST_A_REFUSING_ENGINE))
def test_a_refusing_engine_or_index_is_one_line_never_a_traceback(name: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that needs the engine (or the index, or a registry) and cannot have it fails in one line;
    one that needs none of them succeeds. `pudev clean` once said "removed local tags" when rmi failed.
    No registry retries: a refused connection ends the same after them, 14 s later (test_registry.py
    proves the retries)."""
    monkeypatch.setenv("PUDEV_REGISTRY_RETRIES", "0")
    argv = [name, *(item.replace("{tmp}", str(tmp_path)) for item in AGAINST_A_REFUSING_ENGINE[name])]
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    if code != 0:
        lines = captured.err.strip().splitlines()
        assert lines and lines[-1].startswith("pudev: error: "), captured.err
        assert "removed" not in captured.out
    else:
        # pick answers without an engine: that no engine answers is one of its findings, not its failure.
        assert name in ("variants", "plan", "matrix", "bake", "profiles", "pin", "pick"), f"{name} needed nothing"


def test_arguments_after_a_double_dash_belong_to_pudev_test_alone(capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(["build", "all", "--", "-k", "x"], capsys)
    assert "only `pudev test`" in line and "-- -k x" in line


def test_an_abbreviated_flag_is_not_taken_for_another(capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(["plan", "all", "--mirr", "tuna"], capsys)
    assert "--mirr" in line


def test_a_failing_debootstrap_is_one_line_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`pudev standins` once ended in a CalledProcessError traceback when debootstrap failed (no network)."""
    from pudev.devtools import standins

    tool = tmp_path / "bin" / "debootstrap"
    tool.write_text("#!/bin/sh\necho 'E: Failed getting release file' >&2\nexit 1\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}:/usr/bin:/bin")

    def build_standins(*_: object, **__: object) -> list[str]:  # the first step of a cold build: the OS image
        subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(tmp_path / "rootfs")], check=True)
        return []

    monkeypatch.setattr(standins, "build_standins", build_standins)
    line = fails(["standins", "--no-ca-bundle"], capsys)
    assert "`debootstrap` failed (exit 1)" in line and "pudev standins again" in line
