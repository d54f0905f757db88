"""Parsing one line of a watch stream into a typed event.

Pure. The API server streams one JSON object per line: ``{"type": ..., "object": ...}``.
Every event, bookmarks included, carries the resource version the reflector resumes
from. An ``ERROR`` event carries a Status (e.g. ``code: 410, reason: Expired`` when the
requested version was compacted): it is returned as such, and the reflector turns it
into the typed error, since only ``sro.kube.errors`` builds API errors.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sro.watch import decode


class EventType(enum.Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


class MalformedEvent(ValueError):
    """A stream line that is not a watch event; the stream is treated as broken."""


@dataclass(frozen=True)
class WatchEvent:
    type: EventType
    object: Mapping[str, Any]

    @property
    def resource_version(self) -> str:
        meta = self.object.get("metadata") or {}
        return str(meta.get("resourceVersion", "") or "")


SCHEMA_GROUPS = frozenset({"", "apps"})
"""API groups whose objects the API server decodes into its own types (core: Nodes, Pods;
apps: DaemonSets), so every integer in their events fits 64 bits (``decode.loads``'s
``int64``). A custom resource keeps any number a client wrote."""


def parse(line: bytes | str, *, int64: bool = False) -> WatchEvent | None:
    """One stream line as an event; None for a blank keep-alive line. ``int64``: the
    stream is of a kind in ``SCHEMA_GROUPS``."""
    if not line.strip():
        return None
    try:
        raw = decode.loads(line, int64=int64)
    except ValueError as exc:
        raise MalformedEvent(f"watch line is not JSON: {str(line)[:120]!r}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("object"), dict):
        raise MalformedEvent(f"watch line is not an event: {str(line)[:120]!r}")
    try:
        kind = EventType(raw.get("type"))
    except ValueError as exc:
        raise MalformedEvent(f"unknown watch event type {raw.get('type')!r}") from exc
    return WatchEvent(kind, raw["object"])
