"""What a registry's answer means for one image: it exists, it is missing, the credentials
were refused, or the registry could not be asked.

The four are kept apart because each asks for a different response: a missing image
waits for a build or a push (``ImageMissing``), refused credentials for a pull secret,
and an unreachable or failing registry for nothing at all but patience
(``RegistryUnavailable``): "a registry that cannot be reached is not the same as a
missing image". The registry's own words (its ``errors[].code`` and ``message``, or the
HTTP status) go with every answer but ``exists``, cut short, since the peer is untrusted.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DETAIL_LIMIT = 300
_DIGEST = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}")
MISSING_CODES = frozenset({"MANIFEST_UNKNOWN", "NAME_UNKNOWN", "TAG_INVALID", "NAME_INVALID"})
UNAUTHORIZED_CODES = frozenset({"UNAUTHORIZED", "DENIED"})


class Outcome(enum.StrEnum):
    EXISTS = "exists"
    MISSING = "missing"
    UNAUTHORIZED = "unauthorized"
    UNREACHABLE = "unreachable"  # no answer, a 5xx, a 429, a timeout, TLS, anything unexpected
    INVALID = "invalid"  # the text is not an image reference (a recipe problem)


@dataclass(frozen=True, kw_only=True)
class Answer:
    """The answer for one image. ``digest`` only for ``exists``; ``detail`` says why for the
    others (the registry's code and message, or what failed); ``status`` is the HTTP status
    when there was one."""

    image: str
    outcome: Outcome
    digest: str = ""
    detail: str = ""
    status: int | None = None

    @property
    def exists(self) -> bool:
        return self.outcome is Outcome.EXISTS

    def describe(self) -> str:
        """One line: ``exists sha256:…`` or ``missing: MANIFEST_UNKNOWN: …``."""
        if self.exists:
            return f"exists {self.digest}"
        return f"{self.outcome}: {self.detail}" if self.detail else str(self.outcome)


def short(text: str, *, limit: int = DETAIL_LIMIT) -> str:
    """``text`` on one line, at most ``limit`` characters (a peer's words are untrusted)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def registry_errors(body: bytes) -> list[tuple[str, str]]:
    """``(code, message)`` of a registry error body (``{"errors": [{"code", "message"}]}``),
    empty when the body is not one."""
    try:
        document: Any = json.loads(body.decode("utf-8", "replace")) if body else None
    except ValueError:
        return []
    found = document.get("errors") if isinstance(document, Mapping) else None
    if not isinstance(found, list):
        return []
    return [(str(e.get("code", "")), str(e.get("message", ""))) for e in found[:5] if isinstance(e, Mapping)]


def _detail(status: int, body: bytes) -> str:
    errors = registry_errors(body)
    if errors:
        return short("; ".join(f"{code}: {message}" if message else code for code, message in errors))
    text = body.decode("utf-8", "replace").strip()
    return short(f"HTTP {status}" + (f": {text}" if text else ""))


def classify(*, image: str, status: int, digest: str, body: bytes = b"") -> Answer:
    """The answer a manifest request's ``status``, ``Docker-Content-Digest`` and (bounded)
    body give. A 200 without a well-formed digest is not trusted as ``exists``: the
    caller computes the digest from the manifest itself."""
    if status == 200:
        if _DIGEST.fullmatch(digest):
            return Answer(image=image, outcome=Outcome.EXISTS, digest=digest, status=status)
        return Answer(
            image=image,
            outcome=Outcome.UNREACHABLE,
            detail=short(f"HTTP 200 without a valid Docker-Content-Digest ({digest[:80]!r})"),
            status=status,
        )
    codes = {code for code, _ in registry_errors(body)}
    if status == 404 or (codes & MISSING_CODES and status < 500):
        outcome = Outcome.MISSING
    elif status in (401, 403) or (codes & UNAUTHORIZED_CODES and status < 500):
        outcome = Outcome.UNAUTHORIZED
    else:
        outcome = Outcome.UNREACHABLE
    return Answer(image=image, outcome=outcome, detail=_detail(status, body), status=status)


def unreachable(*, image: str, detail: str) -> Answer:
    """No HTTP answer at all: refused, reset, timed out, a TLS failure, a bad proxy."""
    return Answer(image=image, outcome=Outcome.UNREACHABLE, detail=short(detail))


def invalid(*, image: str, detail: str) -> Answer:
    return Answer(image=image, outcome=Outcome.INVALID, detail=short(detail))


def is_digest(text: str) -> bool:
    return bool(_DIGEST.fullmatch(text))
