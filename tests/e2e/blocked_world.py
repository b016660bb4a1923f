"""The world as a user behind a blocked network sees it, in one container on an internal network.

Its DNS server answers every name with this container's own address and writes each question down.
On ports 80 and 443 it then serves the chosen mirrors' names (a package index with the wheels in
WHEELS, the files under ARCHIVE at their own paths, such as a Debian archive, and the files under
MODELS as a Hugging Face endpoint serves a model's files to huggingface_hub) and holds every other
name's connection open without a word, as a blocked host does: the client hangs until its own
timeout. With `open` in CONFIG, other names are answered at once instead (a 404, or a certificate that
does not match), the way an open network's hosts answer: the session's time with nothing held. Every
question, handshake and request is a line of JSON in LOG. Standard library only: it runs on the image's
own Python.

Usage, with tls_accept.py beside it: python3 blocked_world.py CONFIG.json, where CONFIG names
mirror_hosts, cert, key, wheels, archive, models, log and open."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import ssl
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tls_accept import TlsHttpServer

# The one revision every model here has: huggingface_hub keys its cache on the commit a mirror names.
MODEL_COMMIT = "0" * 40
FOREVER = threading.Event()  # never set: a blocked host's connection waits on it
_LOCK = threading.Lock()


def record(log: Path, **entry: str) -> None:
    with _LOCK, log.open("a") as file:
        file.write(json.dumps(entry) + "\n")


def dns_answer(query: bytes, address: str) -> tuple[str, bytes]:
    """(the name asked, the reply): an A record with `address` for every name, no other records."""
    labels, at = [], 12
    while query[at]:
        length = query[at]
        labels.append(query[at + 1:at + 1 + length].decode("ascii", "replace"))
        at += 1 + length
    question_end = at + 5
    qtype = struct.unpack("!H", query[at + 1:at + 3])[0]
    header = query[:2] + struct.pack("!HHHHH", 0x8180, 1, 1 if qtype == 1 else 0, 0, 0)
    reply = header + query[12:question_end]
    if qtype == 1:
        reply += struct.pack("!HHHLH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(address)
    return ".".join(labels).lower(), reply


def serve_dns(address: str, log: Path) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("0.0.0.0", 53))
    while True:
        query, client = server.recvfrom(512)
        try:
            name, reply = dns_answer(query, address)
        except (IndexError, struct.error):
            continue
        record(log, kind="dns", name=name)
        server.sendto(reply, client)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class World:
    def __init__(self, config: dict[str, Any]) -> None:
        self.mirrors = {host.lower() for host in config["mirror_hosts"]}
        self.log = Path(config["log"])
        self.wheels = Path(config["wheels"])
        self.archive = Path(config["archive"]).resolve()
        self.models = Path(config["models"]).resolve()
        self.open = bool(config.get("open"))

    def listing(self, project: str) -> str | None:
        links = []
        for wheel in sorted(self.wheels.glob("*.whl")):
            if _normal(wheel.name.split("-")[0]) == _normal(project):
                digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
                links.append(f'<a href="/files/{wheel.name}#sha256={digest}">{wheel.name}</a><br/>')
        return f"<!DOCTYPE html><html><body>{''.join(links)}</body></html>" if links else None

    def answer(self, host: str, path: str) -> tuple[int, str, bytes, dict[str, str]]:
        """(status, content type, body, further headers) for a mirror's GET or HEAD of `path`."""
        simple = re.fullmatch(r"/(?:pypi/)?simple/([^/]+)/?", path)
        if simple:
            page = self.listing(simple.group(1))
            return (200, "text/html", page.encode(), {}) if page else (404, "text/plain", b"not here", {})
        if path.startswith("/files/"):
            wheel = self.wheels / Path(path).name
            if wheel.is_file():
                return 200, "application/octet-stream", wheel.read_bytes(), {}
        # What hf_hub_download asks for (HEAD, then GET): /{repo}/resolve/{revision}/{file}, answered with the
        # commit and ETag it needs to place the file in its cache.
        resolve = re.fullmatch(r"/([^/]+/[^/]+)/resolve/[^/]+/(.+)", path.split("?")[0])
        if resolve:
            model_file = (self.models / resolve.group(1) / resolve.group(2)).resolve()
            if model_file.is_relative_to(self.models) and model_file.is_file():
                body = model_file.read_bytes()
                return 200, "application/octet-stream", body, {
                    "X-Repo-Commit": MODEL_COMMIT, "ETag": f'"{hashlib.sha256(body).hexdigest()}"'}
        served = (self.archive / path.split("?")[0].lstrip("/")).resolve()
        if served.is_relative_to(self.archive) and served.is_file():
            return 200, "application/octet-stream", served.read_bytes(), {}
        return 404, "text/plain", b"not here", {}

    def handler(self) -> type[BaseHTTPRequestHandler]:
        world = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._reply(send_body=True)

            def do_HEAD(self) -> None:  # uv asks before it downloads a wheel
                self._reply(send_body=False)

            def _reply(self, *, send_body: bool) -> None:
                host = (self.headers.get("Host") or "").split(":")[0].lower()
                record(world.log, kind="http", host=host, path=self.path)
                if host not in world.mirrors and not world.open:
                    FOREVER.wait()
                status, kind, body, headers = world.answer(host, self.path)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                for header, value in headers.items():
                    self.send_header(header, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        return Handler


class _Server(TlsHttpServer):
    handshake_seconds = None  # a blocked host's handshake never ends

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client giving up on a blocked host is the point, not a fault


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    world = World(config)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config["cert"], config["key"])

    def sni(_socket: ssl.SSLObject, name: str | None, _context: ssl.SSLContext) -> None:
        record(world.log, kind="tls", name=(name or "").lower())
        if (name or "").lower() not in world.mirrors and not world.open:
            FOREVER.wait()  # a blocked host: the handshake never finishes

    context.sni_callback = sni
    address = socket.gethostbyname(socket.gethostname())  # this container's, from the hosts file Docker writes
    threading.Thread(target=serve_dns, args=(address, world.log), daemon=True).start()
    threading.Thread(target=_Server(("0.0.0.0", 80), world.handler(), None).serve_forever, daemon=True).start()
    print("blocked world: serving", flush=True)
    _Server(("0.0.0.0", 443), world.handler(), context).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1])
