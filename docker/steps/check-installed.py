"""`uv pip check` after the second package step, with one upstream quirk let through.

NVIDIA's aarch64 wheel of nvidia-cusparselt-cu13 (0.8.1, which torch's arm64 wheels require)
declares `manylinux2014_sbsa` inside its WHEEL file although its file name says aarch64; pip
installs it and torch loads it, but uv calls it "built for a different platform". Only that
complaint, and only about a package the base brought (BASE_RECORD), passes; anything else fails
the build with uv's own words.
Needs pudev's lock parser (scripts/pudev/common/lock_file.py) mounted beside it as lock_file.py.
Usage: python3 check-installed.py UV BASE_RECORD
"""

import re
import subprocess
import sys
from pathlib import Path

from lock_file import normalize

PLATFORM_QUIRK = re.compile(r"The package `([^`]+)` was built for a different platform")


def main() -> int:
    uv, base_record = sys.argv[1:3]
    checked = subprocess.run([uv, "pip", "check", "--python", sys.executable], capture_output=True, text=True,
                             check=False)
    output = checked.stdout + checked.stderr
    if checked.returncode == 0:
        print(output, end="")
        return 0
    shipped = {normalize(line.split("==")[0]) for line in Path(base_record).read_text().splitlines() if "==" in line}
    problems = [line for line in output.splitlines() if line.startswith("The package")]
    quirks = [line for line in problems if (match := PLATFORM_QUIRK.match(line)) and normalize(match[1]) in shipped]
    if problems and len(quirks) == len(problems):
        print(output, end="")
        print(f"check-installed: let through, the base's own wheels' platform tags: {len(quirks)} package(s)")
        return 0
    print(output, end="", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
