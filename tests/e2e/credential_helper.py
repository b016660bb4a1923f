"""Credentials served the way Docker Desktop and most desktops serve them: a
`docker-credential-NAME` executable on PATH, named by `credHelpers` in the
DOCKER_CONFIG directory's config.json. The helper speaks the credential-helper
protocol (get, store, erase, list; the server on stdin, JSON out; "credentials
not found in native keychain" and exit 1 for an unknown server) over a JSON file,
and logs each call (never the secret) so a test can prove it was asked."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

SCRIPT = '''#!{python}
import json
import sys
from pathlib import Path

STORE, CALLS = Path({store!r}), Path({calls!r})


def key(server):
    return server.strip().split("://", 1)[-1].rstrip("/")


def main():
    action = sys.argv[1] if len(sys.argv) > 1 else ""
    given = sys.stdin.read() if action in ("get", "store", "erase") else ""
    saved = json.loads(STORE.read_text()) if STORE.exists() else {{}}
    with CALLS.open("a") as calls:
        calls.write(action + " " + (key(given) if action != "store" else key(json.loads(given)["ServerURL"])) + "\\n")
    if action == "get":
        entry = saved.get(key(given))
        if entry is None:
            print("credentials not found in native keychain")
            return 1
        print(json.dumps({{"ServerURL": given.strip(), "Username": entry["Username"], "Secret": entry["Secret"]}}))
        return 0
    if action == "list":
        print(json.dumps({{server: entry["Username"] for server, entry in saved.items()}}))
        return 0
    if action == "store":
        entry = json.loads(given)
        saved[key(entry["ServerURL"])] = {{"Username": entry["Username"], "Secret": entry["Secret"]}}
    elif action == "erase":
        saved.pop(key(given), None)
    else:
        print("unknown action: " + action, file=sys.stderr)
        return 1
    STORE.write_text(json.dumps(saved))
    return 0


sys.exit(main())
'''


class CredentialHelper:
    def __init__(self, root: Path, name: str = "pudevtest") -> None:
        self.name = name
        self.bin_dir = root / "bin"
        self.docker_config_dir = root / "docker-config"
        self.store = root / "credential-store.json"
        self.calls_file = root / "credential-helper-calls.log"

    @property
    def executable(self) -> Path:
        return self.bin_dir / f"docker-credential-{self.name}"

    def install(self) -> None:
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        self.docker_config_dir.mkdir(parents=True, exist_ok=True)
        self.executable.write_text(SCRIPT.format(python=sys.executable, store=str(self.store),
                                                 calls=str(self.calls_file)))
        self.executable.chmod(0o755)

    def serve(self, servers: Iterable[str], username: str, secret: str) -> None:
        """These servers (host:port) get this user's credentials from the helper, and only these."""
        servers = list(servers)
        config = {"credHelpers": dict.fromkeys(servers, self.name)}
        (self.docker_config_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        self.store.write_text(json.dumps({server: {"Username": username, "Secret": secret} for server in servers}))
        self.store.chmod(0o600)

    def calls(self) -> list[tuple[str, str]]:
        """(action, server) for each time the helper ran."""
        if not self.calls_file.exists():
            return []
        return [(line.split(" ", 1)[0], line.split(" ", 1)[1]) for line in self.calls_file.read_text().splitlines()]

    def env(self) -> dict[str, str]:
        return {"PATH": f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                "DOCKER_CONFIG": str(self.docker_config_dir)}
