"""What the fault proxy knows of a request, and the faults that stand (``faultproxy``).

The proxy sees decrypted HTTP/1.1 between its two TLS ends. It needs only a request's
head: its line says which resource a watch is for (to delay one kind's watches, so caches
disagree), its query whether it continues a paged list (to hold it across a compaction),
and its length headers where the next request starts. Kept apart from the proxy's I/O so
each reads on its own.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from typing import Any


@dataclasses.dataclass(frozen=True, kw_only=True)
class Faults:
    """The standing faults; replaced as a whole by ``POST /faults``."""

    latency: float = 0.0  # seconds added to every chunk, both directions
    reset_rate: float = 0.0  # share of requests whose connection is reset (before or after it is served)
    delay_watch: tuple[tuple[str, float], ...] = ()  # (resource plural, seconds) for watch answers
    hold_continue: bool = False  # hold list pages asked with a continue token until POST /release

    @staticmethod
    def parse(body: dict[str, Any]) -> Faults:
        delays = body.get("delay_watch") or {}
        return Faults(
            latency=float(body.get("latency", 0.0)),
            reset_rate=float(body.get("reset_rate", 0.0)),
            delay_watch=tuple((str(k), float(v)) for k, v in dict(delays).items()),
            hold_continue=bool(body.get("hold_continue", False)),
        )

    def watch_delay(self, resource: str) -> float:
        return next((s for r, s in self.delay_watch if r == resource), 0.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Request:
    """What the proxy knows of one request: its line, split."""

    method: str
    path: str
    query: dict[str, str]

    @property
    def watch(self) -> bool:
        return self.query.get("watch") in ("1", "true")

    @property
    def resource(self) -> str:
        """The resource plural: the path segment after the namespace (or the group/version)."""
        parts = [p for p in self.path.split("/") if p]
        if "namespaces" in parts:
            i = parts.index("namespaces")
            if i + 2 < len(parts):
                return parts[i + 2]
            return "namespaces"
        base = 2 if parts[:1] == ["api"] else 3
        return parts[base] if len(parts) > base else ""

    @staticmethod
    def parse(head: bytes) -> Request:
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, target, _ = [*line.split(" "), "", ""][:3]
        url = urllib.parse.urlsplit(target)
        return Request(method=method, path=url.path, query=dict(urllib.parse.parse_qsl(url.query)))


def content_length(head: bytes) -> int | None:
    """The body length a request head announces; None for a chunked (or unknown) body."""
    for raw in head.split(b"\r\n")[1:]:
        name, _, value = raw.partition(b":")
        key = name.strip().lower()
        if key == b"transfer-encoding" and b"chunked" in value.lower():
            return None
        if key == b"content-length":
            return int(value.strip())
    return 0
