"""A real image registry on loopback for tests: Debian's ``docker-registry`` (what ``hack/image``
pushes to; taken from its Debian package when it is not installed), open, behind
``htpasswd`` Basic auth, or behind token auth with a small token server of the test's own,
plus the registry HTTP API calls to push and delete an image.

Images are pushed through the registry's own upload API (a config blob, one small
gzipped layer, an OCI manifest) rather than with buildah: the registry stores and serves
them exactly as it would a built image, and a push takes milliseconds without root. The
token server signs RS256 JWTs with an ``x5c`` chain that the registry trusts through its
``rootcertbundle``: the registry verifies every token as it would a production one.
Every server here runs in its own process or thread, so synchronous calls to them from
an async test never wait on the test's event loop.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import gzip
import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support import waiting

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
SERVICE = "sro-test-registry"
ISSUER = "sro-test-issuer"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _bcrypt(password: str) -> str:
    with warnings.catch_warnings():  # the crypt module is deprecated, and the only bcrypt at hand
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # noqa: PLC0415

        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))  # cost 4: fast checks


class _Signer:
    """A self-signed RSA certificate and the JWTs it signs (the registry's ``rootcertbundle``)."""

    def __init__(self, directory: Path) -> None:
        from cryptography import x509  # noqa: PLC0415
        from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
        from cryptography.hazmat.primitives.asymmetric import padding, rsa  # noqa: PLC0415
        from cryptography.x509.oid import NameOID  # noqa: PLC0415

        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ISSUER)])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .sign(self._key, hashes.SHA256())
        )
        self.bundle = directory / "token-ca.pem"
        self.bundle.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        self._x5c = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()
        self._sign = lambda data: self._key.sign(data, padding.PKCS1v15(), hashes.SHA256())

    def token(self, *, subject: str, access: list[dict[str, Any]]) -> str:
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self._x5c]}
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": SERVICE,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": uuid.uuid4().hex,
            "access": access,
        }
        signing = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        return f"{signing}.{_b64url(self._sign(signing.encode()))}"


@dataclass
class HttpPeer:
    """A small HTTP server in a thread (a token service, a failing or slow registry)."""

    server: http.server.ThreadingHTTPServer
    thread: threading.Thread
    requests: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def serve(answer: Callable[[http.server.BaseHTTPRequestHandler], None]) -> HttpPeer:
    """Serve ``answer(handler)`` for every GET and HEAD on a free loopback port until ``stop``."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(f"{self.command} {self.path}")
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                answer(self)

        do_HEAD = do_GET

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="http-peer", daemon=True)
    thread.start()
    return HttpPeer(server=server, thread=thread, requests=seen)


@contextmanager
def http_peer(answer: Callable[[http.server.BaseHTTPRequestHandler], None]) -> Iterator[HttpPeer]:
    peer = serve(answer)
    try:
        yield peer
    finally:
        peer.stop()


@dataclass
class Registry:
    """One running ``docker-registry``; ``auth`` is ``""``, ``"basic"`` or ``"token"``."""

    host: str
    auth: str
    username: str
    password: str
    process: subprocess.Popen[bytes]
    directory: Path
    signer: _Signer | None = None
    token_peer: HttpPeer | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def dockerconfigjson(self, *, password: str | None = None) -> str:
        """A ``.dockerconfigjson`` value (base64, as in a Secret's ``data``) for this registry."""
        auth = base64.b64encode(f"{self.username}:{password or self.password}".encode()).decode()
        document = {"auths": {self.host: {"auth": auth}}}
        return base64.b64encode(json.dumps(document).encode()).decode()

    def _authorization(self, repository: str) -> dict[str, str]:
        if self.auth == "basic":
            raw = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            return {"Authorization": f"Basic {raw}"}
        if self.auth == "token":
            assert self.signer is not None
            access = [{"type": "repository", "name": repository, "actions": ["pull", "push", "delete"]}]
            return {"Authorization": f"Bearer {self.signer.token(subject=self.username, access=access)}"}
        return {}

    def _call(
        self,
        method: str,
        path: str,
        *,
        repository: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        url = path if path.startswith("http") else self.url + path
        request = urllib.request.Request(
            url,
            data=body or None,
            method=method,
            headers={**self._authorization(repository), **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return resp.status, resp.headers
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{method} {url}: {exc.code} {exc.read()[:500]!r}") from None

    def _blob(self, repository: str, data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        _, headers = self._call("POST", f"/v2/{repository}/blobs/uploads/", repository=repository)
        location = urllib.parse.urljoin(self.url, headers["Location"])
        joiner = "&" if "?" in location else "?"
        self._call(
            "PUT",
            f"{location}{joiner}digest={digest}",
            repository=repository,
            body=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        return digest

    def push(self, repository: str, tag: str, *, content: bytes = b"") -> str:
        """Push a small image to ``repository:tag``; return its manifest digest."""
        layer = io.BytesIO()
        with tarfile.open(fileobj=layer, mode="w") as tar:
            info = tarfile.TarInfo("hello")
            payload = content or f"{repository}:{tag}\n".encode()
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
        layer_gz = gzip.compress(layer.getvalue(), mtime=0)
        diff_id = "sha256:" + hashlib.sha256(layer.getvalue()).hexdigest()
        config = json.dumps(
            {"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": [diff_id]}}
        ).encode()
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": {
                    "mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": self._blob(repository, config),
                    "size": len(config),
                },
                "layers": [
                    {
                        "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                        "digest": self._blob(repository, layer_gz),
                        "size": len(layer_gz),
                    }
                ],
            }
        ).encode()
        _, headers = self._call(
            "PUT",
            f"/v2/{repository}/manifests/{tag}",
            repository=repository,
            body=manifest,
            headers={"Content-Type": OCI_MANIFEST},
        )
        digest = headers["Docker-Content-Digest"]
        assert digest == "sha256:" + hashlib.sha256(manifest).hexdigest()
        return str(digest)

    def delete(self, repository: str, digest: str) -> None:
        """Delete a manifest (every tag pointing at it goes with it)."""
        self._call("DELETE", f"/v2/{repository}/manifests/{digest}", repository=repository)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.token_peer is not None:
            self.token_peer.stop()


def _token_answer(signer: _Signer, username: str, password: str) -> Callable[..., None]:
    expected = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()

    def answer(handler: http.server.BaseHTTPRequestHandler) -> None:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(handler.path).query)
        given = handler.headers.get("Authorization")
        if given is not None and given != expected:
            handler.send_response(401)
            handler.end_headers()
            return
        access = []
        if given == expected:  # anonymous callers get a token that grants nothing, as Docker Hub's do
            for scope in query.get("scope", []):
                kind, _, rest = scope.partition(":")
                name, _, actions = rest.rpartition(":")
                access.append({"type": kind, "name": name, "actions": actions.split(",")})
        body = json.dumps(
            {"token": signer.token(subject=username, access=access), "expires_in": 300}
        ).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


TOOLS = Path(os.environ.get("SRO_CACHE_DIR") or Path.home() / ".cache" / "sro") / "tools"


def binary() -> str:
    """``docker-registry``: installed, or extracted once from Debian's package into the tools
    cache (``apt-get download`` needs no root; ``update`` does, on a machine with no lists)."""
    installed = shutil.which("docker-registry")
    if installed is not None:
        return installed
    target = TOOLS / "docker-registry"
    if target.exists():
        return str(target)
    with tempfile.TemporaryDirectory() as tmp:
        download = ["apt-get", "download", "-q", "docker-registry"]
        proc = subprocess.run(download, cwd=tmp, capture_output=True, text=True, check=False, timeout=300)
        if proc.returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], check=True, timeout=300)
            subprocess.run(download, cwd=tmp, capture_output=True, text=True, check=True, timeout=300)
        (deb,) = Path(tmp).glob("docker-registry_*.deb")
        subprocess.run(["dpkg-deb", "-x", str(deb), str(Path(tmp) / "x")], check=True, timeout=120)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(tmp) / "x" / "usr" / "bin" / "docker-registry", target.with_suffix(".tmp"))
        target.with_suffix(".tmp").rename(target)
    return str(target)


def start(directory: Path, *, auth: str = "") -> Registry:
    """Start a registry in ``directory`` (storage deletes enabled); wait until it answers."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    username, password = "puller", uuid.uuid4().hex
    config = [
        "version: 0.1",
        "log:",
        "  level: error",
        "storage:",
        "  delete:",
        "    enabled: true",
        "  filesystem:",
        f"    rootdirectory: {directory / 'data'}",
        "http:",
        f"  addr: 127.0.0.1:{port}",
    ]
    signer: _Signer | None = None
    token_peer: HttpPeer | None = None
    if auth == "basic":
        (directory / "htpasswd").write_text(f"{username}:{_bcrypt(password)}\n")
        config += ["auth:", "  htpasswd:", "    realm: sro-test", f"    path: {directory / 'htpasswd'}"]
    elif auth == "token":
        signer = _Signer(directory)
        token_peer = serve(_token_answer(signer, username, password))
        config += [
            "auth:",
            "  token:",
            f"    realm: {token_peer.url}/token",
            f"    service: {SERVICE}",
            f"    issuer: {ISSUER}",
            f"    rootcertbundle: {signer.bundle}",
        ]
    (directory / "config.yml").write_text("\n".join(config) + "\n")
    with (directory / "registry.log").open("wb") as log:  # the child keeps its own descriptor
        process = subprocess.Popen([binary(), "serve", str(directory / "config.yml")], stdout=log, stderr=log)
    registry = Registry(
        host=f"127.0.0.1:{port}",
        auth=auth,
        username=username,
        password=password,
        process=process,
        directory=directory,
        signer=signer,
        token_peer=token_peer,
    )

    def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"docker-registry exited: {(directory / 'registry.log').read_text()}")
        try:
            with urllib.request.urlopen(f"{registry.url}/v2/", timeout=2):
                return True
        except urllib.error.HTTPError as exc:
            return exc.code == 401

    try:
        waiting.wait_for_sync(
            answers, timeout=30, interval=0.05, message=f"docker-registry on {registry.host}"
        )
    except BaseException:
        registry.stop()
        raise
    return registry
