"""argparse whose usage errors are one line, like pudev's own: on the host (`pudev`) and in the
image (`pudev mirror`), where pudev.cli is not shipped. It also refuses what argparse lets slip:
an empty value (never "the default"), a flag given twice (never "the last one wins") and an
abbreviated flag (`--mirr` is not `--mirror`)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

# Where a namespace remembers which single-valued flags it has seen (not an identifier: no flag's dest).
_GIVEN = "given flags"


def flag_name(action: argparse.Action) -> str:
    """How the user wrote it: --out, or the positional's METAVAR."""
    if action.option_strings:
        return "/".join(action.option_strings)
    metavar = action.metavar if isinstance(action.metavar, str) else None
    return metavar or str(action.dest).upper()


def _once(action: argparse.Action, namespace: argparse.Namespace) -> None:
    given: set[str] = getattr(namespace, _GIVEN, set())
    if action.dest in given:
        raise argparse.ArgumentError(action, "given twice; give it once")
    setattr(namespace, _GIVEN, given | {action.dest})


class _StoreOnce(argparse._StoreAction):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if option_string is not None:  # positionals are filled once by argparse itself
            _once(self, namespace)
        super().__call__(parser, namespace, values, option_string)


class _StoreConstOnce(argparse._StoreConstAction):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        _once(self, namespace)
        super().__call__(parser, namespace, values, option_string)


class _StoreTrueOnce(_StoreConstOnce):
    def __init__(self, option_strings: Sequence[str], dest: str, default: bool = False, required: bool = False,
                 help: str | None = None) -> None:
        super().__init__(option_strings, dest, const=True, default=default, required=required, help=help)


class OneLineParser(argparse.ArgumentParser):
    """argparse, whose errors are one line that names the problem and where the fix is, like pudev's own."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.register("action", "store", _StoreOnce)
        self.register("action", None, _StoreOnce)
        self.register("action", "store_const", _StoreConstOnce)
        self.register("action", "store_true", _StoreTrueOnce)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # Only what the user typed comes here (defaults do not): an empty value is a mistake (an unset shell
        # variable, a stray ""), never a request for the default.
        typed = action.nargs not in (0, argparse.PARSER, argparse.REMAINDER)
        if typed and any(not text.strip() for text in arg_strings):
            fix = "give one" if action.required else "give one, or leave it out for the default"
            raise argparse.ArgumentError(action, f"an empty value; {fix}")
        return super()._get_values(action, arg_strings)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        parsed, extra = super().parse_known_args(args, namespace)
        if hasattr(parsed, _GIVEN):
            delattr(parsed, _GIVEN)
        return parsed, extra

    def error(self, message: str) -> NoReturn:
        # "argument --out: --out PATH: ..." (a check that names its flag) and "argument --out: ..." read as pudev's own.
        message = re.sub(r"^argument (\S+): (?=\1 )", "", message).removeprefix("argument ")
        where = "`pudev COMMAND --help`" if self.prog == "pudev" else f"`{self.prog} --help`"
        print(f"pudev: error: {message}; see {where}", file=sys.stderr)
        sys.exit(2)
