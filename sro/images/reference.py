"""Image references as a container runtime reads them: registry, repository, tag, digest.

A recipe writes ``nvidia/driver:550-{{ kernel.full }}``; the kubelet pulls
``registry-1.docker.io/v2/nvidia/driver/manifests/550-…``. Asking any other registry or
repository than the one the runtime would pull from answers the wrong question, so
the rules are the ones of ``distribution/reference`` (which containerd and CRI-O follow):
the first path component is a registry only when it holds a ``.`` or a ``:`` or is
``localhost``; otherwise the image is on Docker Hub, whose one-component names live
under ``library/``; the tag is ``latest`` when neither a tag nor a digest is given; a
digest, when given, is what is pulled (the tag is then only a label).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"
HUB_ALIASES = frozenset({DOCKER_HUB, "index.docker.io", DOCKER_HUB_API})
DEFAULT_TAG = "latest"
MAX_NAME = 255  # registry plus repository, as distribution/reference bounds it
MAX_REFERENCE = 1024  # the whole text; a longer one is refused before any regex runs

_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_HOST_LABEL = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_REGISTRY = re.compile(rf"(?:{_HOST_LABEL}(?:\.{_HOST_LABEL})*|\[[a-fA-F0-9:]+\])(?::[0-9]{{1,5}})?")
_TAG = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}")


class InvalidReference(ValueError):
    """The text is not an image reference a runtime could pull."""


@dataclass(frozen=True, kw_only=True, order=True)
class Reference:
    """One image: ``registry`` as written (``docker.io`` for Docker Hub), ``repository``
    with Docker Hub's ``library/`` added, and a ``tag`` and/or a ``digest`` ("" if absent)."""

    registry: str
    repository: str
    tag: str = ""
    digest: str = ""

    @property
    def api_host(self) -> str:
        """The host (and port) the registry API answers on."""
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    @property
    def manifest(self) -> str:
        """What goes after ``/manifests/``: the digest when there is one, else the tag."""
        return self.digest or self.tag or DEFAULT_TAG

    def __str__(self) -> str:
        text = f"{self.registry}/{self.repository}"
        if self.tag or not self.digest:
            text += f":{self.tag or DEFAULT_TAG}"
        return text + (f"@{self.digest}" if self.digest else "")


def _split_registry(name: str) -> tuple[str, str]:
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        return first, rest
    return DOCKER_HUB, name


def parse(text: str) -> Reference:
    """The reference ``text`` names; InvalidReference saying why when it names none."""
    if not text or len(text) > MAX_REFERENCE:
        raise InvalidReference(f"an image reference has 1 to {MAX_REFERENCE} characters")
    if text != text.strip() or any(c.isspace() for c in text):
        raise InvalidReference(f"{text[:200]!r}: an image reference has no white space")
    name, at, digest = text.partition("@")
    if at and not _DIGEST.fullmatch(digest):
        raise InvalidReference(f"{text[:200]!r}: {digest[:100]!r} is not a digest (algorithm:hex)")
    tag = ""
    last_slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > last_slash:
        name, tag = name[:colon], name[colon + 1 :]
        if not _TAG.fullmatch(tag):
            raise InvalidReference(f"{text[:200]!r}: {tag[:100]!r} is not a tag")
    registry, repository = _split_registry(name)
    port = registry.rpartition(":")[2] if not registry.endswith("]") and ":" in registry else ""
    if (registry != DOCKER_HUB and not _REGISTRY.fullmatch(registry)) or (port and int(port) > 65535):
        raise InvalidReference(f"{text[:200]!r}: {registry[:100]!r} is not a registry host")
    if registry in HUB_ALIASES:
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in repository:
        repository = f"library/{repository}"
    parts = repository.split("/")
    if not all(_COMPONENT.fullmatch(p) for p in parts):
        raise InvalidReference(
            f"{text[:200]!r}: a repository is lower-case letters and digits separated by '/', '.', '_' or '-'"
        )
    if len(registry) + 1 + len(repository) > MAX_NAME:
        raise InvalidReference(f"{text[:200]!r}: the name is longer than {MAX_NAME} characters")
    return Reference(registry=registry, repository=repository, tag=tag, digest=digest)


def is_loopback(host: str) -> bool:
    """Whether a registry host (with or without a port) is this machine: such registries
    speak plain HTTP by default, as containerd and Docker let them."""
    bare = host.rsplit(":", 1)[0] if not host.endswith("]") and host.count(":") == 1 else host
    bare = bare.split("]")[0].lstrip("[") if bare.startswith("[") else bare
    return bare == "localhost" or bare.startswith("127.") or bare == "::1"
