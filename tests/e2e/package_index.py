"""A package index with the metadata semantics uv relies on, on 127.0.0.1: the JSON simple API
(PEP 691) with sizes, hashes and upload times (PEP 700), and each wheel's core metadata as a file of
its own (PEP 658), so uv resolves from metadata alone, as it does against the real indexes. It holds
what release day asks about (torch, torchvision, NVIDIA's CUDA runtime and toolkit wheels) and only
that: the tests name it to uv as a higher-priority index (UV_INDEX), so uv takes every other package
from the default index, as before. torch's own index lives under /whl/cuXYZ/ as on pytorch.org.

Kinder than the real ones: plain HTTP (no TLS), no redirects, and the wheels themselves are never
served (uv does not fetch them to resolve). The real torch index has no upload times, which is why
pudev reads the release date from the default index."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

JSON = "application/vnd.pypi.simple.v1+json"
TAGS = {"linux/amd64": "manylinux_2_28_x86_64", "linux/arm64": "manylinux_2_28_aarch64"}


@dataclass
class PackageIndex:
    """files[index][project] -> [(filename, metadata, upload time)]; index "simple" is the default one."""

    files: dict[str, dict[str, list[tuple[str, str, str]]]] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def add(self, index: str, project: str, version: str, *, requires: tuple[str, ...] = (),
            platforms: tuple[str, ...] = ("linux/amd64",), python: str = "cp312", uploaded: str) -> None:
        """One wheel per platform of `project` `version` (a local label like +cu130 included)."""
        metadata = "\n".join(["Metadata-Version: 2.1", f"Name: {project}", f"Version: {version}",
                              *(f"Requires-Dist: {requirement}" for requirement in requires)]) + "\n"
        name = project.replace("-", "_")
        for platform in platforms:
            filename = f"{name}-{version}-{python}-{python if python != 'py3' else 'none'}-{TAGS[platform]}.whl"
            self.files.setdefault(index, {}).setdefault(project, []).append((filename, metadata, uploaded))

    def release(self, torch: str, *, default: str, cudas: tuple[str, ...], uploaded: str,
                torchvision: str) -> None:
        """torch `torch` on the default index as its `default` CUDA build, and on torch's index for each of
        `cudas` on both platforms; the torchvision that requires it."""
        runtime = f"13.{default.split('.')[1]}.{40 + int(default.split('.')[1])}"
        self.add("simple", "torch", torch, requires=(f"nvidia-cuda-runtime=={runtime}",), uploaded=uploaded)
        self.add("simple", "torchvision", torchvision, requires=(f"torch=={torch}",), uploaded=uploaded)
        self.add("simple", "nvidia-cuda-runtime", runtime, python="py3", uploaded=uploaded)
        for cuda in cudas:
            self.add(f"whl/cu{cuda.replace('.', '')}", "torch", f"{torch}+cu{cuda.replace('.', '')}",
                     platforms=tuple(TAGS), uploaded=uploaded)

    def toolkit(self, cuda: str, *, toolkit: str, jitlink: str, uploaded: str) -> None:
        """NVIDIA's wheels a CUDA stand-in toolkit is assembled from."""
        self.add("simple", "cuda-toolkit", toolkit, python="py3", uploaded=uploaded)
        self.add("simple", "nvidia-nvjitlink", jitlink, python="py3", uploaded=uploaded)

    def page(self, index: str, project: str) -> dict[str, object] | None:
        entries = self.files.get(index, {}).get(project)
        if entries is None:
            return None
        files = []
        for filename, metadata, uploaded in entries:
            files.append({"filename": filename, "url": f"/files/{index}/{filename}", "size": 1000 + len(filename),
                          "hashes": {"sha256": hashlib.sha256(filename.encode()).hexdigest()},
                          "core-metadata": {"sha256": hashlib.sha256(metadata.encode()).hexdigest()},
                          "upload-time": uploaded, "requires-python": ">=3.10"})
        return {"meta": {"api-version": "1.1"}, "name": project, "files": files,
                "versions": sorted({filename.split("-")[1] for filename, _, _ in entries})}

    def metadata(self, path: str) -> str | None:
        index, _, filename = path.removeprefix("/files/").removesuffix(".metadata").rpartition("/")
        return next((metadata for entries in self.files.get(index, {}).values()
                     for name, metadata, _ in entries if name == filename), None)


class IndexServer:
    """The index served on 127.0.0.1 while the `with` block runs; `url` is its address."""

    def __init__(self, index: PackageIndex) -> None:
        self.index = index
        catalogue = index

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                catalogue.asked.append(self.path)
                if self.path.endswith(".metadata"):
                    text = catalogue.metadata(self.path)
                    self._answer(text, "text/plain")
                    return
                parts = self.path.strip("/").split("/")
                page = catalogue.page("/".join(parts[:-1]), parts[-1]) if len(parts) >= 2 else None
                self._answer(None if page is None else json.dumps(page), JSON)

            def _answer(self, text: str | None, kind: str) -> None:
                body = (text or "not found").encode()
                self.send_response(200 if text is not None else 404)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> IndexServer:
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.server.shutdown()
        self.server.server_close()
