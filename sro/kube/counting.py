"""How the API client reports its requests: the metrics it calls, and the resource each
request is counted under.

Apart from ``sro.kube.http``, so the transport reads alone. The operator's metrics
(``sro.observe.metrics``, a layer below ``sro.kube``) implement ``ApiMetrics`` by shape,
without importing it.
"""

from __future__ import annotations

from typing import Protocol


class ApiMetrics(Protocol):
    def api_request(
        self, *, verb: str, resource: str, code: str, method: str, host: str, seconds: float | None
    ) -> None: ...

    def api_throttled(self, *, resource: str, code: str, seconds: float) -> None: ...

    def api_limited(self, *, verb: str, host: str, seconds: float) -> None: ...

    def watch_line_skipped(self, *, resource: str) -> None: ...


class NoMetrics:
    """Counting nothing: an ``Api`` made without metrics (tools, tests)."""

    def api_request(
        self, *, verb: str, resource: str, code: str, method: str, host: str, seconds: float | None
    ) -> None:
        return None

    def api_throttled(self, *, resource: str, code: str, seconds: float) -> None:
        return None

    def api_limited(self, *, verb: str, host: str, seconds: float) -> None:
        return None

    def watch_line_skipped(self, *, resource: str) -> None:
        return None


def resource_of(path: str) -> str:
    """The resource a request path names, for a request sent without one: the plural
    (``nodes``, ``events``), with its subresource (``pods/log``); ``discovery`` for ``/api``,
    ``/apis`` and a group-version's listing; the first segment otherwise (``version``)."""
    parts = [p for p in path.partition("?")[0].split("/") if p]
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"]:
        rest = parts[3:]
    else:
        return parts[0] if parts else ""
    if not rest:
        return "discovery"
    namespaced = rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize")
    if namespaced:
        rest = rest[2:]
    return "/".join([rest[0], *rest[2:3]])
