"""A Docker Registry HTTP API v2 client: digests, manifests, tags, blobs (streamed,
checked against their digest), cross-repository mounts and uploads.

Every call names the token scope it needs; tokens are kept per scope, so a pull-only
login never silently turns into a push, and a token without the scope a call needs is
one clear error naming the repository and the scope. Loopback registries may speak
plain HTTP, as docker allows for them: https is tried first, and only a registry that
does not speak TLS at all is spoken to over http.

Every refusal is one line naming what to check: for 404, that the repository and the tag
or digest exist (`skopeo inspect`); for 401 and 403, the credentials (`docker login`) and
the repository's permissions. Messages name no secret and no local path.
"""

from __future__ import annotations

import hashlib
import io
import os
import urllib.parse
from typing import IO

import requests

from pudev.common.environment import setting
from pudev.common.errors import PudevError
from pudev.registry import credentials, transport
from pudev.registry.names import is_loopback
from pudev.registry.oci import MANIFEST_TYPES, content_digest
from pudev.registry.tokens import authorization, parse_challenge

CHUNK = 1 << 20
SMALL_BLOB_LIMIT = 64 << 20  # artifacts pudev reads whole (test results, SBOMs) are far smaller
TAGS_PAGE = 1000  # tags asked for per request; the registry's Link header leads to the next page


class RegistryClient:
    def __init__(self, host: str, *, retries: int | None = None, backoff: float = 1.0, timeout: float = 30) -> None:
        self.host = host
        self.retries = retries if retries is not None else int(setting("PUDEV_REGISTRY_RETRIES"))
        self.timeout = timeout
        self._http = transport.session(self.retries, backoff)
        self._verify = transport.ca_bundle()
        self._scheme = "" if is_loopback(host) else "https"
        self._tokens: dict[str, str] = {}
        self._credentials: credentials.Credentials | None = None
        self._credentials_read = False

    # -- transport -------------------------------------------------------------------------------
    def _base(self) -> str:
        if not self._scheme:
            self._scheme = self._probe_scheme()
        return f"{self._scheme}://{self.host}"

    def _probe_scheme(self) -> str:
        """https, unless this loopback registry does not speak TLS at all (a bad certificate is no reason)."""
        try:
            requests.get(f"https://{self.host}/v2/", verify=self._verify, timeout=self.timeout).close()
        except requests.exceptions.SSLError as error:
            if "certificate" in str(error).lower():
                raise self._tls_error(error) from None
            return "http"
        except requests.RequestException:
            pass  # not up (yet): the call itself reports it after its retries
        return "https"

    def _tls_error(self, error: Exception) -> PudevError:
        return transport.tls_failure(self.host, error)

    def _send(self, method: str, url: str, scope: str, *, headers: dict[str, str], body: bytes | None,
              stream: bool) -> requests.Response:
        try:
            answer = self._http.request(method, url, headers=headers, data=body, stream=stream, verify=self._verify,
                                        timeout=self.timeout, allow_redirects=True,
                                        auth=transport.HostAuth(self.host, self._tokens.get(scope, "")))
        except requests.exceptions.SSLError as error:
            raise self._tls_error(error) from None
        except requests.RequestException as error:
            reason = error.args[0].reason if error.args and hasattr(error.args[0], "reason") else error
            raise self._unreachable(str(reason)) from None
        if answer.status_code in transport.TRANSIENT_STATUS:
            answer.close()
            raise self._unreachable(f"HTTP {answer.status_code}")
        return answer

    def _unreachable(self, reason: str) -> PudevError:
        return PudevError(f"registry {self.host} does not answer ({reason}) after {self.retries + 1} tries; check "
                          "the address and that the registry is up")

    def _login(self) -> credentials.Credentials | None:
        if not self._credentials_read:
            self._credentials, self._credentials_read = credentials.resolve(self.host), True
        return self._credentials

    def request(self, method: str, path: str, *, scope: str = "", headers: dict[str, str] | None = None,
                body: bytes | None = None, stream: bool = False) -> requests.Response:
        """One API call: auth for `scope` (fetched on the registry's challenge, then kept), retries."""
        url, headers = self._base() + path, dict(headers or {})
        answer = self._send(method, url, scope, headers=headers, body=body, stream=stream)
        challenge = parse_challenge(answer.headers.get("WWW-Authenticate", ""))
        if answer.status_code == 401 and challenge is not None:
            answer.close()
            self._tokens[scope] = authorization(challenge, host=self.host, scope=scope, credentials=self._login(),
                                                session=self._http, verify=self._verify, timeout=self.timeout)
            answer = self._send(method, url, scope, headers=headers, body=body, stream=stream)
        if answer.status_code in (401, 403) and scope:
            answer.close()
            raise self._scope_error(scope, answer.status_code)
        return answer

    def _scope_error(self, scope: str, status: int) -> PudevError:
        login = self._login()
        who = f"the login from {_without_home(login.source)}" if login else "an anonymous request (no login found)"
        wanted = "; ".join(f"{name.split(':')[2]} on repository {name.split(':')[1]}" for name in scope.split())
        fix = ("an account or token that may push there (GHCR: a classic token with write:packages)"
               if "push" in scope else f"an account that may read it: `docker login {self.host}`")
        # Registries answer so for a repository that does not exist too, rather than say whether it does.
        return PudevError(f"{self.host} refused {wanted} for {who} (HTTP {status}); check the credentials and the "
                          f"repository's permissions, and that the repository's name is right; use {fix}")

    def _where(self, repository: str, reference: str = "") -> str:
        """The image as `skopeo inspect docker://...` takes it: by digest with @, by tag with :."""
        if not reference:
            return f"{self.host}/{repository}"
        return f"{self.host}/{repository}{'@' if reference.startswith('sha256:') else ':'}{reference}"

    def _refused(self, repository: str, reference: str, asked: str, answer: requests.Response, *,
                 missing: str = "the repository and the tag or digest exist") -> PudevError:
        """One line for a registry that answered a request for `asked` with an error status, naming what to
        check: for 404, that `missing`; for 401 and 403, the credentials and the repository's permissions."""
        where, status, said = self._where(repository, reference), answer.status_code, _said(answer)
        inspect = f"`skopeo inspect docker://{where}`" if reference else f"`skopeo list-tags docker://{where}`"
        if status == 404:
            return PudevError(f"{where}: the registry has no {asked} there (HTTP 404{said}); check that {missing}, "
                              f"e.g. {inspect}")
        if status in (401, 403):
            return PudevError(f"{where}: the registry refused to read the {asked} (HTTP {status}{said}); check the "
                              f"credentials (`docker login {self.host}`) and the repository's permissions")
        return PudevError(f"{where}: the registry answered HTTP {status} for the {asked}{said}; check the repository "
                          f"and the reference ({inspect}), then retry")

    # -- API -------------------------------------------------------------------------------------
    def ping(self) -> None:
        answer = self.request("GET", "/v2/")
        answer.close()
        if answer.status_code not in (200, 401):
            raise PudevError(f"{self.host} is not a Docker registry (GET /v2/ answered {answer.status_code}); check "
                             "the address: the registry's host[:port], not a web page's")

    def digest(self, repository: str, reference: str, *, push_scope: bool = False) -> str | None:
        """The manifest digest a tag points at, or None when the tag does not exist."""
        scope = f"repository:{repository}:{'pull,push' if push_scope else 'pull'}"
        answer = self.request("HEAD", f"/v2/{repository}/manifests/{reference}", scope=scope,
                              headers={"Accept": ", ".join(MANIFEST_TYPES)})
        if answer.status_code == 404:
            return None
        if answer.status_code != 200:
            raise self._refused(repository, reference, "manifest", answer)
        return answer.headers.get("Docker-Content-Digest") or None

    def manifest(self, repository: str, reference: str) -> tuple[bytes, str]:
        answer = self.request("GET", f"/v2/{repository}/manifests/{reference}", scope=f"repository:{repository}:pull",
                              headers={"Accept": ", ".join(MANIFEST_TYPES)})
        if answer.status_code != 200:
            raise self._refused(repository, reference, "manifest", answer)
        return answer.content, answer.headers.get("Content-Type", MANIFEST_TYPES[2])

    def tag(self, repository: str, digest: str, tag: str) -> None:
        """Point `tag` at an already pushed manifest (no layer is sent again)."""
        body, media_type = self.manifest(repository, digest)
        self.put_manifest(repository, tag, body, media_type)

    def list_tags(self, repository: str) -> list[str]:
        """Every tag of the repository (an unknown repository has none), page by page as the registry's
        Link header leads (Docker Hub's pytorch/pytorch and nvidia/cuda hold thousands)."""
        tags: list[str] = []
        path: str | None = f"/v2/{repository}/tags/list?n={TAGS_PAGE}"
        while path:
            answer = self.request("GET", path, scope=f"repository:{repository}:pull")
            if answer.status_code == 404:
                return tags
            if answer.status_code != 200:
                raise self._refused(repository, "", "tag list", answer)
            tags += answer.json().get("tags") or []
            following = answer.links.get("next", {}).get("url")
            path = _path_of(following) if following else None
        return tags

    def put_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> requests.Response:
        answer = self.request("PUT", f"/v2/{repository}/manifests/{reference}",
                              scope=f"repository:{repository}:pull,push", headers={"Content-Type": media_type},
                              body=body)
        if answer.status_code not in (200, 201):
            raise PudevError(f"{self._where(repository, reference)}: storing the manifest answered HTTP "
                             f"{answer.status_code}{_said(answer)}; check that the repository exists and that its "
                             "layers and config were pushed before the manifest")
        return answer

    # -- blobs -----------------------------------------------------------------------------------
    def blob_exists(self, repository: str, digest: str) -> bool:
        answer = self.request("HEAD", f"/v2/{repository}/blobs/{digest}", scope=f"repository:{repository}:pull")
        return answer.status_code == 200

    def stream_blob(self, repository: str, digest: str, sink: IO[bytes], *, limit: int | None = None) -> int:
        """Write a blob to `sink` chunk by chunk (following the registry's redirect to its storage),
        checking it against its digest; returns its size."""
        answer = self.request("GET", f"/v2/{repository}/blobs/{digest}", scope=f"repository:{repository}:pull",
                              stream=True)
        with answer:
            if answer.status_code != 200:
                raise self._refused(repository, "", f"blob {digest[:19]}", answer,
                                    missing="the repository holds the image this blob belongs to (push it again)")
            hasher, size = hashlib.sha256(), 0
            for chunk in answer.iter_content(CHUNK):
                size += len(chunk)
                if limit is not None and size > limit:
                    raise PudevError(f"{self.host}/{repository}: blob {digest[:19]} is larger than {limit} bytes, "
                                     "more than such a file holds; check that the digest names the artifact meant")
                hasher.update(chunk)
                sink.write(chunk)
        if f"sha256:{hasher.hexdigest()}" != digest:
            raise PudevError(f"{self.host}/{repository}: blob {digest[:19]} does not match its digest (altered on "
                             "the way, or stored damaged); retry, and check any proxy between here and the registry")
        return size

    def get_blob(self, repository: str, digest: str) -> bytes:
        """A small blob (an artifact's payload), whole."""
        buffer = io.BytesIO()
        self.stream_blob(repository, digest, buffer, limit=SMALL_BLOB_LIMIT)
        return buffer.getvalue()

    def mount_blob(self, repository: str, digest: str, source: str) -> bool:
        """Link a blob of `source` into `repository` without sending it. False: the registry
        would not mount it (it then opened an upload, which is cancelled)."""
        scope = f"repository:{repository}:pull,push repository:{source}:pull"
        query = urllib.parse.urlencode({"mount": digest, "from": source})
        answer = self.request("POST", f"/v2/{repository}/blobs/uploads/?{query}", scope=scope)
        if answer.status_code == 201:
            return True
        location = answer.headers.get("Location", "")
        if answer.status_code == 202 and location:
            self.request("DELETE", _path_of(location), scope=scope).close()
        return False

    def upload_blob(self, repository: str, data: bytes) -> str:
        """A small blob (an artifact's config or payload) in one request; returns its digest."""
        digest = content_digest(data)
        if self.blob_exists(repository, digest):
            return digest
        scope = f"repository:{repository}:pull,push"
        started = self.request("POST", f"/v2/{repository}/blobs/uploads/", scope=scope)
        location = started.headers.get("Location", "")
        if started.status_code != 202 or not location:
            raise PudevError(f"{self.host}/{repository}: starting an upload answered HTTP {started.status_code}"
                             f"{_said(started)}; check that the repository exists and that the login may push to it")
        separator = "&" if "?" in location else "?"
        query = urllib.parse.urlencode({"digest": digest})
        done = self.request("PUT", f"{_path_of(location)}{separator}{query}", scope=scope, body=data,
                            headers={"Content-Type": "application/octet-stream"})
        if done.status_code != 201:
            raise PudevError(f"{self.host}/{repository}: uploading blob {digest[:19]} answered HTTP "
                             f"{done.status_code}{_said(done)}; check that the login may push to the repository, "
                             "then retry")
        return digest


def _said(answer: requests.Response) -> str:
    """The registry's own error code (`MANIFEST_UNKNOWN`, `DENIED`, ...) as `, CODE`: the first error of its JSON
    body, never the raw body (one line, and nothing the registry echoed of the request)."""
    try:
        body = answer.json()
    except (ValueError, RuntimeError, requests.RequestException):
        return ""
    errors = body.get("errors") if isinstance(body, dict) else None
    code = errors[0].get("code") if isinstance(errors, list) and errors and isinstance(errors[0], dict) else None
    return f", {code}" if isinstance(code, str) and code.replace("_", "").isalnum() and code.isascii() else ""


def _without_home(source: str) -> str:
    """Where credentials came from, with docker's config file named as docker names it, not by its path."""
    path = str(credentials.config_path())
    shown = "$DOCKER_CONFIG/config.json" if os.environ.get("DOCKER_CONFIG") else "~/.docker/config.json"
    return source.replace(path, shown)


def _path_of(location: str) -> str:
    """Upload locations may be absolute URLs or paths; the upload continues on this client's host."""
    parsed = urllib.parse.urlsplit(location)
    return parsed.path + (f"?{parsed.query}" if parsed.query else "")
