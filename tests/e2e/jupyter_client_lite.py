"""Talk to a JupyterLab container over HTTP and its kernel websocket, as a browser would."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any

import websocket


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class JupyterServer:
    port: int
    token: str = ""
    base_url: str = "/"
    host: str = "127.0.0.1"  # a container's own address where no port is published (an internal network)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{self.base_url}{path.lstrip('/')}"

    def request(self, method: str, path: str, body: Any = None, *, token: str | None = None) -> tuple[int, Any]:
        """(status, decoded JSON or None). `token=""` sends no token at all."""
        chosen = self.token if token is None else token
        headers = {"Content-Type": "application/json"}
        if chosen:
            headers["Authorization"] = f"token {chosen}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url(path), data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                payload = response.read()
                return response.status, json.loads(payload) if payload else None
        except urllib.error.HTTPError as error:
            return error.code, None

    def run_code(self, kernel_id: str, code: str, *, timeout: float = 120) -> str:
        """Execute `code` in a kernel over the websocket; returns its stdout."""
        ws_url = self.url(f"api/kernels/{kernel_id}/channels").replace("http://", "ws://", 1)
        connection = websocket.create_connection(ws_url, timeout=timeout,
                                                 header=[f"Authorization: token {self.token}"])
        message_id = uuid.uuid4().hex
        connection.send(json.dumps({
            "header": {"msg_id": message_id, "username": "e2e", "session": uuid.uuid4().hex,
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True},
        }))
        output, deadline = [], time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                reply = json.loads(connection.recv())
                if reply.get("parent_header", {}).get("msg_id") != message_id:
                    continue
                kind = reply["header"]["msg_type"]
                if kind == "stream":
                    output.append(reply["content"]["text"])
                elif kind == "error":
                    raise AssertionError(f"cell failed: {reply['content']['ename']}: {reply['content']['evalue']}")
                elif kind == "status" and reply["content"]["execution_state"] == "idle":
                    return "".join(output)
        finally:
            connection.close()
        raise AssertionError(f"no reply within {timeout} s; output so far: {output}")


def notebook(source: str) -> dict[str, Any]:
    return {"type": "notebook", "format": "json", "content": {
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code", "id": "probe", "source": source, "metadata": {}, "outputs": [],
                   "execution_count": None}],
    }}
