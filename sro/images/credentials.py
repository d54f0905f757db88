"""Which pull secret's credential the kubelet would send to a registry for an image.

An image check that used other credentials than the pull would answer another question:
an image the kubelet can pull must not be reported unauthorized, nor the reverse. So
the choice follows the kubelet's keyring: each ``.dockerconfigjson`` (or legacy
``.dockercfg``) entry is a key ``host[:port][/path]`` (a scheme, as in
``https://index.docker.io/v1/``, is ignored); it matches an image whose registry has the
same host (a ``*`` label in the key matches one label) and port, and whose repository
starts with the key's path. The most specific key wins (longest path, then an exact
host over a wildcard), and between equals the earlier secret (the pod's own before its
service account's). Docker Hub's aliases (``index.docker.io``, ``registry-1.docker.io``)
are one host. Secrets are untrusted input: anything unreadable is skipped and said.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sro.images import reference
from sro.watch import decode

DOCKERCONFIGJSON = ".dockerconfigjson"
DOCKERCFG = ".dockercfg"
MAX_SECRET_BYTES = 1024 * 1024  # the API server's own limit for a Secret


@dataclass(frozen=True, kw_only=True)
class Credential:
    username: str
    password: str
    secret: str  # where it came from, for messages (never the password)

    @property
    def fingerprint(self) -> str:
        """A short stable identity, so cached answers and tokens are per credential."""
        return hashlib.sha256(f"{self.username}\0{self.password}".encode()).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"Credential(username={self.username!r}, secret={self.secret!r})"


@dataclass(frozen=True, kw_only=True)
class PullSecret:
    """A Secret as the API returns it: name and ``data`` (base64 values)."""

    name: str
    data: Mapping[str, str]

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> PullSecret:
        meta = body.get("metadata") or {}
        data = body.get("data") or {}
        return cls(
            name=str(meta.get("name", "")),
            data={str(k): str(v) for k, v in data.items()} if isinstance(data, Mapping) else {},
        )


@dataclass(frozen=True, kw_only=True)
class Entry:
    host: str  # lower case, Docker Hub as docker.io
    path: str  # "" or a repository prefix without slashes at the ends
    credential: Credential


def _host(host: str) -> str:
    host = host.lower()
    return reference.DOCKER_HUB if host in reference.HUB_ALIASES else host


def _key(key: str) -> tuple[str, str] | None:
    text = key.strip()
    if "://" not in text:
        text = "https://" + text
    try:
        parts = urlsplit(text)
    except ValueError:  # "[" without "]", and the like
        return None
    if not parts.netloc:
        return None
    path = parts.path.strip("/")
    if _host(parts.netloc) == reference.DOCKER_HUB and path in ("v1", "v2"):
        path = ""  # https://index.docker.io/v1/ is the whole of Docker Hub
    return _host(parts.netloc), path


def _credential(value: Any, *, secret: str) -> Credential | None:
    if not isinstance(value, Mapping):
        return None
    username, password = value.get("username"), value.get("password")
    auth = value.get("auth")
    if isinstance(auth, str) and auth:
        try:
            username, _, password = base64.b64decode(auth, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
    if not isinstance(username, str) or not isinstance(password, str) or not (username or password):
        return None
    return Credential(username=username, password=password, secret=secret)


def entries(secret: PullSecret) -> tuple[list[Entry], list[str]]:
    """The registry entries of one pull secret, and a line per part that could not be read."""
    problems: list[str] = []
    for key, nested in ((DOCKERCONFIGJSON, True), (DOCKERCFG, False)):
        encoded = secret.data.get(key)
        if encoded is None:
            continue
        if len(encoded) > MAX_SECRET_BYTES * 4 // 3 + 4:
            return [], [f"secret {secret.name}: {key} is larger than {MAX_SECRET_BYTES} bytes"]
        try:
            # decode.loads: a secret nested past the recursion limit is a ValueError too
            document = decode.loads(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            return [], [f"secret {secret.name}: {key} is not base64-encoded JSON"]
        auths = document.get("auths") if nested and isinstance(document, Mapping) else document
        if not isinstance(auths, Mapping):
            return [], [f"secret {secret.name}: {key} holds no registry entries"]
        found: list[Entry] = []
        for raw_key, value in auths.items():
            where = _key(str(raw_key))
            credential = _credential(value, secret=secret.name)
            if where is None or credential is None:
                problems.append(
                    f"secret {secret.name}: the entry {str(raw_key)[:100]!r} has no usable credential"
                )
                continue
            found.append(Entry(host=where[0], path=where[1], credential=credential))
        return found, problems
    return [], [f"secret {secret.name}: neither {DOCKERCONFIGJSON} nor {DOCKERCFG}"]


def _host_matches(pattern: str, host: str) -> bool:
    p_name, _, p_port = pattern.partition(":") if not pattern.startswith("[") else (pattern, "", "")
    h_name, _, h_port = host.partition(":") if not host.startswith("[") else (host, "", "")
    if p_port != h_port:
        return False
    p_labels, h_labels = p_name.split("."), h_name.split(".")
    return len(p_labels) == len(h_labels) and all(
        fnmatch.fnmatchcase(h, p) for p, h in zip(p_labels, h_labels, strict=True)
    )


def _path_matches(prefix: str, repository: str) -> bool:
    return not prefix or repository == prefix or repository.startswith(prefix + "/")


def pick(secrets: Sequence[PullSecret], ref: reference.Reference) -> Credential | None:
    """The credential the kubelet would send for ``ref`` from ``secrets`` (in the order the
    pod lists them), or None: then the registry is asked anonymously."""
    host = _host(ref.registry)
    best: tuple[int, int, int] | None = None
    chosen: Credential | None = None
    for order, secret in enumerate(secrets):
        for entry in entries(secret)[0]:
            if not (_host_matches(entry.host, host) and _path_matches(entry.path, ref.repository)):
                continue
            rank = (len(entry.path), int("*" not in entry.host), -order)
            if best is None or rank > best:
                best, chosen = rank, entry.credential
    return chosen


def basic_header(credential: Credential) -> str:
    """The ``Authorization`` value of Basic auth with ``credential``."""
    raw = f"{credential.username}:{credential.password}".encode()
    return "Basic " + base64.b64encode(raw).decode()


def problems(secrets: Iterable[PullSecret]) -> list[str]:
    """Every pull secret's unreadable parts, one line each (for a warning, never a stop)."""
    return [line for secret in secrets for line in entries(secret)[1]]
