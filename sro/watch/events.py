"""Parsing one line of a watch stream into a typed event.

Pure. The API server streams one JSON object per line: ``{"type": ..., "object": ...}``.
Every event, bookmarks included, carries the resource version the reflector resumes
from. An ``ERROR`` event carries a Status (e.g. ``code: 410, reason: Expired`` when the
requested version was compacted): it is returned as such, and the reflector turns it
into the typed error, since only ``sro.kube.errors`` builds API errors.

A watch of Nodes or Pods reads only what the cache keeps (``Parser`` with a ``body`` type
from ``sro.model.bodies``): msgspec decodes the fields the type names and skips the rest
(a pod's managedFields, a node's images and addresses) without building them, about half
of decoding everything, on the operator's most frequent work. A line that does not fit
the type (an ``ERROR`` event's Status, a field of another type, anything not JSON) is
parsed whole by ``parse``, which decides what it is, as it would without the type.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypedDict, TypeVar

import msgspec

from sro.watch import decode

B = TypeVar("B")


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


class _Line(msgspec.Struct, Generic[B]):
    """A watch line whose object is decoded as ``B`` (unknown fields skipped)."""

    type: str
    object: B


# A list's metadata as the reflector reads it; ``continue`` is a Python keyword, hence the
# functional form.
_ListMeta = TypedDict("_ListMeta", {"resourceVersion": str, "continue": str}, total=False)


class _Page(msgspec.Struct, Generic[B]):
    """A list answer whose items are decoded as ``B``."""

    items: list[B] | None = None
    metadata: _ListMeta | None = None


class Parser:
    """``parse`` for one stream; with ``body`` (a ``TypedDict`` of ``sro.model.bodies``),
    each object keeps only the fields the type names (the module's docstring), in watch
    lines and in list pages (``page``) alike."""

    def __init__(self, *, body: type | None = None, int64: bool = False) -> None:
        self._typed: msgspec.json.Decoder[_Line[Any]] | None = None
        self._typed_page: msgspec.json.Decoder[_Page[Any]] | None = None
        if body is not None:
            self._typed = msgspec.json.Decoder(_Line[body])  # type: ignore[valid-type]
            self._typed_page = msgspec.json.Decoder(_Page[body])  # type: ignore[valid-type]
        self._int64 = int64

    def page(self, answer: bytes) -> Any:
        """A list answer (``{"metadata": ..., "items": [...]}``) with each item read as the
        body type says; anything else (a Status, a page that does not fit) as
        ``decode.loads`` reads it. A page of 500 Nodes is megabytes: read whole, it costs
        twice its size in objects for the moment it is projected."""
        if self._typed_page is not None:
            try:
                typed = self._typed_page.decode(answer)
            except decode.TYPED_MISSES:
                pass  # decode.loads decides what it is
            else:
                if typed.items is not None and typed.metadata is not None:
                    return {"metadata": typed.metadata, "items": typed.items}
        return decode.loads(answer)

    def __call__(self, line: bytes | str) -> WatchEvent | None:
        if self._typed is not None:
            try:
                typed = self._typed.decode(line)
            except decode.TYPED_MISSES:
                pass  # parse says what it is
            else:
                kind = _TYPES.get(typed.type)
                if kind is not None and kind is not EventType.ERROR:  # an ERROR's Status is read whole
                    return WatchEvent(kind, typed.object)
        return parse(line, int64=self._int64)


_TYPES = {t.value: t for t in EventType}
