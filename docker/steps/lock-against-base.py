"""The base image's packages win: drop from the lock every package the base already
ships, so installing the lock never upgrades or downgrades them, and record what
the base shipped (the in-image suite checks it is all still there, unchanged).

`pudev lock` resolves against the base's packages where the base is available,
so normally nothing differs; a lock made without the base (--without-base), or a
base re-tagged since, is reported here and `uv pip check` after the install proves
the kept versions still satisfy everything.
The packages install in layers, each from its slice of the lock in a stage of its
own on the bare base, so each writes BASE_RECORD from what Python sees there: the
base alone.
Over the layers, in the final stage (install-layer.sh since), Python sees every layer too, so
--recorded takes what the base ships from BASE_RECORD, as the layers' stages wrote it, and leaves
it as it is; DROPPED (names the lock pins no more) less those gives REMOVE_LIST.
Usage: python3 lock-against-base.py LOCK INSTALL_LIST BASE_RECORD
       python3 lock-against-base.py --recorded LOCK INSTALL_LIST BASE_RECORD DROPPED REMOVE_LIST
"""

import re
import sys
from importlib.metadata import distributions
from pathlib import Path

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def blocks(text: str) -> list[list[str]]:
    """A requirement line with its continuation, hash and comment lines."""
    found: list[list[str]] = []
    for line in text.splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            found.append([line])
        elif found:
            found[-1].append(line)
    return found


def shipped_now() -> dict[str, tuple[str, str]]:
    shipped: dict[str, tuple[str, str]] = {}
    for dist in distributions():  # sys.path order: the first copy of a name is the one Python imports
        if dist.metadata["Name"]:
            shipped.setdefault(normalize(dist.metadata["Name"]), (dist.metadata["Name"], dist.version))
    return shipped


def shipped_recorded(record: Path) -> dict[str, tuple[str, str]]:
    pins = (line.split("==", 1) for line in record.read_text(encoding="utf-8").splitlines() if "==" in line)
    return {normalize(name): (name, version) for name, version in pins}


def main() -> None:
    recorded = sys.argv[1:2] == ["--recorded"]
    lock, install, record, *dropping = (Path(arg) for arg in sys.argv[1 + recorded:])
    shipped = shipped_recorded(record) if recorded else shipped_now()
    kept, differ, wanted = [], [], []
    for block in blocks(lock.read_text(encoding="utf-8")):
        match = PIN.match(block[0])
        if match is None:
            continue
        name, version = normalize(match.group(1)), match.group(2)
        if name in shipped:
            kept.append(name)
            if shipped[name][1].split("+")[0] != version:
                differ.append(f"{name} {shipped[name][1]} (lock: {version})")
            continue
        wanted.append("\n".join(block))
    install.write_text("".join(f"{block}\n" for block in wanted), encoding="utf-8")  # empty: nothing to install
    if recorded:
        dropped, remove = dropping
        names = [name for name in dropped.read_text(encoding="utf-8").split() if normalize(name) not in shipped]
        remove.write_text("".join(f"{name}\n" for name in names), encoding="utf-8")
        print(f"lock-against-base: {len(names)} packages the lock pins no more to remove")
    else:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text("".join(f"{name}=={version}\n" for name, version in sorted(shipped.values())))
    print(f"lock-against-base: {len(wanted)} packages to install; {len(kept)} the base already ships are kept")
    if differ:
        print(f"lock-against-base: the base's own versions win over the lock for {', '.join(differ)}; "
              "run `pudev lock` against this base to make the lock agree")


main()
