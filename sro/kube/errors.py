"""Turning API answers into the typed errors of ``sro.errors``.

The one place that knows how an error looks on the wire: an HTTP status with a
``Status`` body, or an in-stream ``ERROR`` watch event holding a Status. Callers
catch ``NotFound``, ``Conflict``, ``Expired``... and never look at codes, so the
HTTP library stays replaceable. A body that is not a Status is not kept: it may
hold anything, secrets included; only its first characters go into the message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sro import errors

_BY_CODE: dict[int, type[errors.ApiError]] = {
    400: errors.BadRequest,
    401: errors.Unauthorized,
    403: errors.Forbidden,
    404: errors.NotFound,
    409: errors.Conflict,
    410: errors.Expired,
    422: errors.Invalid,
    429: errors.TooManyRequests,
}

# How much of a non-Status body may reach a message.
_SNIPPET = 256


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (only the delta-seconds form is used)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def retry_delay(exc: BaseException | None, *, backoff: float, cap: float) -> float:
    """How long to wait before retrying after ``exc``: the caller's ``backoff``, but never
    less than the server's Retry-After (a 429 from API Priority and Fairness, a 503 from
    an overloaded or starting server), which is bounded by ``cap`` so a wrong header
    cannot park the operator for hours."""
    after = exc.retry_after if isinstance(exc, errors.ApiError) else None
    if after is None:
        return backoff
    return max(backoff, min(after, cap))


# The API server's words for a 500 that is the request's fault, not the server's.
_UNTYPED_PATCH = "failed to create typed patch object"


def _class_for(code: int, reason: str, message: str = "") -> type[errors.ApiError]:
    if reason in ("Expired", "Gone"):
        return errors.Expired
    if code >= 500 and _UNTYPED_PATCH in message:
        return errors.UntypedPatch
    if code >= 500:
        return errors.ServerError
    return _BY_CODE.get(code, errors.ApiError)


def from_status(
    status: Mapping[str, Any], *, code: int | None = None, retry_after: str | None = None
) -> errors.ApiError:
    """The typed error for a Status body (from a response or an ERROR event)."""
    code = int(status.get("code") or code or 0)
    reason = str(status.get("reason", "") or "")
    details = status.get("details") or {}
    causes = tuple(
        errors.Cause(
            field=str(c.get("field", "")), reason=str(c.get("reason", "")), message=str(c.get("message", ""))
        )
        for c in details.get("causes") or ()
        if isinstance(c, Mapping)
    )
    after = parse_retry_after(retry_after)
    if after is None and isinstance(details.get("retryAfterSeconds"), int):
        after = float(details["retryAfterSeconds"])
    message = str(status.get("message", "") or reason or f"HTTP {code}")
    cls = _class_for(code, reason, message)
    return cls(
        message,
        code=code,
        reason=reason,
        status=dict(status),
        causes=causes,
        retry_after=after,
    )


def from_response(code: int, body: bytes, *, retry_after: str | None = None) -> errors.ApiError:
    """The typed error for an HTTP error answer, whatever its body."""
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("kind") == "Status":
        return from_status(parsed, code=code, retry_after=retry_after)
    snippet = body[:_SNIPPET].decode("utf-8", "replace").strip()
    return _class_for(code, "", snippet)(
        f"HTTP {code}: {snippet}" if snippet else f"HTTP {code}",
        code=code,
        retry_after=parse_retry_after(retry_after),
    )
