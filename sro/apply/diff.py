"""Would an apply change anything? Decided without a request.

Pure. A server-side apply of an unchanged object still costs a request (the server
answers 200 and writes nothing), so sro compares first. An apply is needed when:

* the object is absent from the cache (never made, or deleted by someone: put it back);
* the desired body changed since sro last applied it: the apply stamps a hash of the
  desired body into the annotation ``sro.dev/applied-hash``, which also catches fields
  sro stopped setting, which a field comparison cannot see;
* someone edited a field sro sets (drift): every field of the desired body must be
  present in the live object with the same value. Maps are compared as subsets (the
  server adds defaults and other managers' fields); lists must have the same length,
  element by element, with map elements compared as subsets.

A false "needed" costs one idempotent request; a false "not needed" would leave
drift in place, so where a value is normalised by the server (quantities such as
``0.5`` becoming ``500m``) the comparison errs towards applying.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

HASH_ANNOTATION = "sro.dev/applied-hash"


def desired_hash(body: Mapping[str, Any]) -> str:
    """A stable digest of a desired body (the hash annotation itself excluded)."""
    meta = dict(body.get("metadata") or {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != HASH_ANNOTATION}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    canonical = json.dumps({**body, "metadata": meta}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def stamped(body: Mapping[str, Any], *, digest: str = "") -> dict[str, Any]:
    """The body to send: the desired body with its hash annotation set (``digest``: its
    ``desired_hash``, when the caller computed it already)."""
    meta = dict(body.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), HASH_ANNOTATION: digest or desired_hash(body)}
    return {**body, "metadata": meta}


def contains(live: Any, want: Any) -> bool:
    """Whether every field of ``want`` is in ``live`` with an equal value."""
    if isinstance(want, Mapping):
        if not isinstance(live, Mapping):
            return False
        return all(k in live and contains(live[k], v) for k, v in want.items())
    if isinstance(want, Sequence) and not isinstance(want, str | bytes):
        if not isinstance(live, Sequence) or isinstance(live, str | bytes) or len(live) != len(want):
            return False
        return all(contains(lv, wv) for lv, wv in zip(live, want, strict=True))
    if isinstance(want, bool) or isinstance(live, bool):
        return want is live
    if isinstance(want, int | float) and isinstance(live, int | float):
        return float(want) == float(live)
    return bool(want == live)


def already_sent(
    desired: Mapping[str, Any],
    *,
    sent: tuple[str, int] | None,
    cached_version: int | None,
    kind_lagging: bool,
    digest: str = "",
) -> bool:
    """Whether this process already applied exactly ``desired`` (``sent``: the body's hash and
    the resourceVersion the apply returned) and the cache has not shown that write yet: it
    holds the object at an older version, or (``cached_version`` None) not at all while the
    kind's cache lags behind this process's writes. ``needs_apply`` would then say yes on
    every pass until the watch delivers the write; that write's own watch event (or the
    object's deletion, if someone deleted it since) brings the next pass, so nothing waits."""
    if sent is None or sent[0] != (digest or desired_hash(desired)):
        return False
    if cached_version is None:
        return kind_lagging
    return cached_version < sent[1]


def needs_apply(desired: Mapping[str, Any], live: Mapping[str, Any] | None, *, digest: str = "") -> bool:
    """Whether applying ``desired`` over ``live`` (None: absent) would change anything
    (``digest``: ``desired``'s ``desired_hash``, when the caller has it)."""
    if live is None:
        return True
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    if annotations.get(HASH_ANNOTATION) != (digest or desired_hash(desired)):
        return True
    # "status" is not sent with an apply to the main resource; identity fields are the
    # server's business.
    wanted = {k: v for k, v in desired.items() if k not in ("status", "apiVersion", "kind")}
    return not contains(live, wanted)
