"""argparse whose usage errors are one line, like pudev's own: on the host (`pudev`) and in the
image (`pudev mirror`), where pudev.cli is not shipped."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """argparse, whose errors are one line that names the problem and where the fix is, like pudev's own."""

    def error(self, message: str) -> NoReturn:
        where = "`pudev COMMAND --help`" if self.prog == "pudev" else f"`{self.prog} --help`"
        print(f"pudev: error: {message}; see {where}", file=sys.stderr)
        sys.exit(2)
