"""The base image's packages win: drop from a part of the lock every package the base already
ships, so installing it never upgrades or downgrades them, and record what the base shipped
(the in-image suite checks it is all still there, unchanged).

`pudev lock` resolves against the base's packages where the base is available, so normally
nothing differs; a lock made without the base (--without-base), or a base re-tagged since, is
reported here, and `uv pip check` after the install proves the kept versions still satisfy
everything. The first package step sees the base alone and writes BASE_RECORD; the second sees
the first step's packages too, so it reads what the base shipped from BASE_RECORD (--recorded).
Needs pudev's lock parser (scripts/pudev/common/lock_file.py) mounted beside it as lock_file.py.
Usage: python3 lock-against-base.py [--recorded] PINS INSTALL_LIST BASE_RECORD
"""

import sys
from importlib.metadata import distributions
from pathlib import Path

from lock_file import normalize, read_pins


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
    lock, install, record = (Path(arg) for arg in sys.argv[1 + recorded:])
    shipped = shipped_recorded(record) if recorded else shipped_now()
    kept, differ, wanted = [], [], []
    for pin in read_pins(lock.read_text(encoding="utf-8")):
        if pin.name in shipped:
            kept.append(pin.name)
            if shipped[pin.name][1].split("+")[0] != pin.version:
                differ.append(f"{pin.name} {shipped[pin.name][1]} (lock: {pin.version})")
            continue
        wanted.append(pin.text)
    install.write_text("".join(f"{text}\n" for text in wanted), encoding="utf-8")  # empty: nothing to install
    if not recorded:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text("".join(f"{name}=={version}\n" for name, version in sorted(shipped.values())))
    print(f"lock-against-base: {len(wanted)} packages to install; {len(kept)} the base already ships are kept")
    if differ:
        print(f"lock-against-base: the base's own versions win over the lock for {', '.join(differ)}; "
              "run `pudev lock` against this base to make the lock agree")


if __name__ == "__main__":
    main()
