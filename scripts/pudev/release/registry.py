"""A small Docker Registry HTTP API v2 client: digests, manifests, tags, blobs.

Used where the Docker CLI cannot help: resolving digests (`pudev pin`), copying a
tested manifest to the release repository by cross-repository blob mount and
tagging it (`pudev promote`), artifacts that refer to an image (test results,
SBOMs), and reporting what exists remotely. Auth
follows the registry's challenge (Bearer token or Basic) with credentials from
~/.docker/config.json when present; transient failures are retried with backoff.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from pudev.common.errors import PudevError
from pudev.common.imageref import ImageRef

MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
)
DOCKER_HUB = "registry-1.docker.io"
TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}


def api_host(domain: str) -> str:
    """Where a registry's HTTP API lives: Docker Hub's is not at docker.io."""
    return DOCKER_HUB if domain in ("", "docker.io", "index.docker.io") else domain


def registry_host(ref: ImageRef) -> str:
    return api_host(ref.domain)


def repository_path(ref: ImageRef) -> str:
    """Docker Hub's short names live under library/."""
    if registry_host(ref) == DOCKER_HUB and "/" not in ref.path:
        return f"library/{ref.path}"
    return ref.path


def _is_local(host: str) -> bool:
    name = host.split(":")[0]
    return name in ("localhost", "127.0.0.1", "::1") or name.startswith("127.")


def _docker_credentials(host: str) -> str:
    """base64 user:password for `host` from ~/.docker/config.json, or ''."""
    path = Path(os.environ.get("DOCKER_CONFIG", Path.home() / ".docker")) / "config.json"
    try:
        auths = json.loads(path.read_text()).get("auths", {})
    except (OSError, ValueError):
        return ""
    keys = [host, f"https://{host}", "https://index.docker.io/v1/"] if host == DOCKER_HUB else [host, f"https://{host}"]
    for key in keys:
        if key in auths and auths[key].get("auth"):
            return str(auths[key]["auth"])
    return ""


class TransientError(Exception):
    """A failure worth retrying (connection refused, 5xx, 429)."""


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


class RegistryClient:
    def __init__(self, host: str, *, retries: int | None = None, backoff: float = 1.0, timeout: float = 30) -> None:
        self.host = host
        self.scheme = "http" if _is_local(host) else "https"
        self.retries = retries if retries is not None else int(os.environ.get("PUDEV_REGISTRY_RETRIES", "4"))
        self.backoff = backoff
        self.timeout = timeout
        self._tokens: dict[str, str] = {}

    # -- transport -------------------------------------------------------------------------------
    def _once(self, method: str, path: str, headers: dict[str, str], body: bytes | None) -> Response:
        request = urllib.request.Request(f"{self.scheme}://{self.host}{path}", data=body, method=method,
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                return Response(answer.status, dict(answer.headers), answer.read())
        except urllib.error.HTTPError as error:
            if error.code in TRANSIENT_STATUS:
                raise TransientError(f"HTTP {error.code}") from None
            return Response(error.code, dict(error.headers), error.read())
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise TransientError(str(reason)) from None

    def request(self, method: str, path: str, *, scope: str = "", headers: dict[str, str] | None = None,
                body: bytes | None = None) -> Response:
        """One API call with auth and retries; raises PudevError once retries are spent."""
        headers = dict(headers or {})
        delay = self.backoff
        for attempt in range(self.retries + 1):
            try:
                if scope in self._tokens:
                    headers["Authorization"] = self._tokens[scope]
                answer = self._once(method, path, headers, body)
                if answer.status == 401 and "Authorization" not in headers:
                    self._tokens[scope] = self._authorize(answer.headers, scope)
                    headers["Authorization"] = self._tokens[scope]
                    answer = self._once(method, path, headers, body)
                return answer
            except TransientError as error:
                if attempt == self.retries:
                    raise PudevError(f"registry {self.host} does not answer ({error}) after {attempt + 1} tries; "
                                     "check the address and that the registry is up") from None
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def _authorize(self, headers: dict[str, str], scope: str) -> str:
        challenge = next((value for key, value in headers.items() if key.lower() == "www-authenticate"), "")
        credentials = _docker_credentials(self.host)
        if challenge.lower().startswith("basic"):
            return f"Basic {credentials}"
        fields = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        if "realm" not in fields:
            raise PudevError(f"registry {self.host} asks for an authentication this client does not know: {challenge}")
        # Several scopes (a cross-repository mount reads one repository and writes another).
        query = [("service", fields.get("service", ""))] + [("scope", item) for item in scope.split()]
        token_request = urllib.request.Request(f"{fields['realm']}?{urllib.parse.urlencode(query)}")
        if credentials:
            token_request.add_header("Authorization", f"Basic {credentials}")
        try:
            with urllib.request.urlopen(token_request, timeout=self.timeout) as answer:
                data = json.loads(answer.read())
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise PudevError(f"could not get a token for {self.host} from {fields['realm']}: {error}") from None
        return f"Bearer {data.get('token') or data.get('access_token', '')}"

    # -- API -------------------------------------------------------------------------------------
    def ping(self) -> None:
        answer = self.request("GET", "/v2/")
        if answer.status not in (200, 401):
            raise PudevError(f"{self.host} is not a Docker registry (GET /v2/ answered {answer.status})")

    def digest(self, repository: str, reference: str, *, push_scope: bool = False) -> str | None:
        """The manifest digest a tag points at, or None when the tag does not exist."""
        scope = f"repository:{repository}:{'pull,push' if push_scope else 'pull'}"
        answer = self.request("HEAD", f"/v2/{repository}/manifests/{reference}", scope=scope,
                              headers={"Accept": ", ".join(MANIFEST_TYPES)})
        if answer.status == 404:
            return None
        if answer.status != 200:
            raise PudevError(f"{self.host}/{repository}:{reference}: registry answered {answer.status}")
        header = next((v for k, v in answer.headers.items() if k.lower() == "docker-content-digest"), "")
        return header or None

    def manifest(self, repository: str, digest: str) -> tuple[bytes, str]:
        answer = self.request("GET", f"/v2/{repository}/manifests/{digest}", scope=f"repository:{repository}:pull",
                              headers={"Accept": ", ".join(MANIFEST_TYPES)})
        if answer.status != 200:
            raise PudevError(f"{self.host}/{repository}@{digest}: registry answered {answer.status}")
        media_type = next((v for k, v in answer.headers.items() if k.lower() == "content-type"), MANIFEST_TYPES[2])
        return answer.body, media_type

    def tag(self, repository: str, digest: str, tag: str) -> None:
        """Point `tag` at an already pushed manifest (no layer is sent again)."""
        body, media_type = self.manifest(repository, digest)
        answer = self.request("PUT", f"/v2/{repository}/manifests/{tag}", scope=f"repository:{repository}:pull,push",
                              headers={"Content-Type": media_type}, body=body)
        if answer.status not in (200, 201):
            raise PudevError(f"tagging {self.host}/{repository}:{tag} failed: registry answered {answer.status}")

    # -- blobs and manifests by digest (promote, artifacts) ---------------------------------------
    def blob_exists(self, repository: str, digest: str) -> bool:
        answer = self.request("HEAD", f"/v2/{repository}/blobs/{digest}", scope=f"repository:{repository}:pull")
        return answer.status == 200

    def get_blob(self, repository: str, digest: str) -> bytes:
        answer = self.request("GET", f"/v2/{repository}/blobs/{digest}", scope=f"repository:{repository}:pull")
        if answer.status != 200:
            raise PudevError(f"{self.host}/{repository}: blob {digest[:19]} answered {answer.status}")
        if "sha256:" + hashlib.sha256(answer.body).hexdigest() != digest:
            raise PudevError(f"{self.host}/{repository}: blob {digest[:19]} does not match its digest")
        return answer.body

    def mount_blob(self, repository: str, digest: str, source: str) -> bool:
        """Link a blob of `source` into `repository` without sending it. False: the registry
        would not mount it (it then opened an upload, which is cancelled)."""
        scope = f"repository:{repository}:pull,push repository:{source}:pull"
        query = urllib.parse.urlencode({"mount": digest, "from": source})
        answer = self.request("POST", f"/v2/{repository}/blobs/uploads/?{query}", scope=scope)
        if answer.status == 201:
            return True
        location = _header(answer, "location")
        if answer.status == 202 and location:
            self.request("DELETE", _path_of(location), scope=scope)
        return False

    def upload_blob(self, repository: str, data: bytes) -> str:
        """A small blob (an artifact's config or payload) in one request; returns its digest."""
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if self.blob_exists(repository, digest):
            return digest
        scope = f"repository:{repository}:pull,push"
        started = self.request("POST", f"/v2/{repository}/blobs/uploads/", scope=scope)
        location = _header(started, "location")
        if started.status != 202 or not location:
            raise PudevError(f"{self.host}/{repository}: starting an upload answered {started.status}")
        separator = "&" if "?" in location else "?"
        done = self.request("PUT", f"{_path_of(location)}{separator}digest={digest}", scope=scope, body=data,
                            headers={"Content-Type": "application/octet-stream"})
        if done.status != 201:
            raise PudevError(f"{self.host}/{repository}: uploading blob {digest[:19]} answered {done.status}")
        return digest

    def put_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> Response:
        answer = self.request("PUT", f"/v2/{repository}/manifests/{reference}",
                              scope=f"repository:{repository}:pull,push", headers={"Content-Type": media_type},
                              body=body)
        if answer.status not in (200, 201):
            detail = answer.body.decode(errors="replace")[:200]
            raise PudevError(f"{self.host}/{repository}:{reference}: storing the manifest answered {answer.status} "
                             f"({detail})")
        return answer


def _header(answer: Response, name: str) -> str:
    return next((value for key, value in answer.headers.items() if key.lower() == name), "")


def _path_of(location: str) -> str:
    """Upload locations may be absolute URLs or paths; requests go to this client's host."""
    parsed = urllib.parse.urlsplit(location)
    return parsed.path + (f"?{parsed.query}" if parsed.query else "")
