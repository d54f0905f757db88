"""Writing a SpecialResource's status and Events: only when something changed.

A reconcile runs many times for every change that matters; writing status or an Event
each time would turn every requeue into API traffic (and an operator restart into a
burst of writes). So:

* status goes through the status subresource, by server-side apply under the operator's
  field manager (fields sro stops setting disappear), and only when the computed status
  differs from the one the cache holds;
* Events (events.k8s.io/v1) are the planner's transitions, emitted after the status that
  records the transition is written, so a failed status write never leaves an Event
  announcing something status does not show, and a retried reconcile (which sees the
  written status) never repeats the Event.

Events about a cluster-scoped SpecialResource live in the ``default`` namespace, as
client-go's recorder puts them, where ``kubectl describe`` finds them.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import structlog

from sro.kube import http
from sro.model import specialresource as sr_model

FIELD_MANAGER = "sro"
REPORTING_CONTROLLER = "sro.dev/special-resource-operator"
EVENTS_NAMESPACE = "default"
_NOTE_MAX = 1024  # events.k8s.io/v1 refuses notes over 1 KiB

log = structlog.get_logger(__name__)


class EventLike(Protocol):
    """One Event to emit about a SpecialResource (``sro.status.events.Event``)."""

    @property
    def type(self) -> str: ...  # Normal | Warning

    @property
    def reason(self) -> str: ...  # CamelCase, e.g. StateCompleted

    @property
    def message(self) -> str: ...


def status_path(name: str) -> str:
    return f"/apis/{sr_model.GROUP}/{sr_model.VERSION}/{sr_model.PLURAL}/{name}/status"


def unchanged(current: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether writing ``new`` over ``current`` would change nothing (compared as JSON)."""
    if current is None:
        return False
    return _canonical(current) == _canonical(new)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


class StatusWriter:
    """Writes status and Events for SpecialResources through one API client."""

    def __init__(self, api: http.Requester, *, instance: str | None = None) -> None:
        self._api = api
        self._instance = instance or os.environ.get("POD_NAME") or socket.gethostname()

    async def write_status(
        self, *, name: str, current: Mapping[str, Any] | None, status: Mapping[str, Any]
    ) -> bool:
        """Apply ``status`` to SpecialResource ``name`` unless it equals ``current``; True if written."""
        if unchanged(current, status):
            return False
        body = {
            "apiVersion": sr_model.API_VERSION,
            "kind": sr_model.KIND,
            "metadata": {"name": name},
            "status": dict(status),
        }
        await self._api.request(
            "PATCH",
            status_path(name),
            body=body,
            content_type="application/apply-patch+yaml",
            params={"fieldManager": FIELD_MANAGER, "force": "true"},
        )
        log.debug("status written", sr=name, state=status.get("state", ""))
        return True

    async def emit(self, *, sr_name: str, sr_uid: str, events: Sequence[EventLike]) -> int:
        """Create one Event per entry; an Event that cannot be written is logged, not raised.

        Events are advisory: losing one must never fail the reconcile that caused it.
        """
        written = 0
        for event in events:
            body = self._event_body(sr_name=sr_name, sr_uid=sr_uid, event=event)
            try:
                await self._api.request(
                    "POST", f"/apis/events.k8s.io/v1/namespaces/{EVENTS_NAMESPACE}/events", body=body
                )
                written += 1
            except Exception as exc:  # advisory write, see docstring
                log.warning("event not written", sr=sr_name, reason=event.reason, error=str(exc))
        return written

    def _event_body(self, *, sr_name: str, sr_uid: str, event: EventLike) -> dict[str, Any]:
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{sr_name}.{uuid.uuid4().hex[:16]}", "namespace": EVENTS_NAMESPACE},
            "eventTime": now,
            "reportingController": REPORTING_CONTROLLER,
            "reportingInstance": self._instance[:128],
            "action": "Reconcile",
            "reason": event.reason,
            "note": event.message[:_NOTE_MAX],
            "type": event.type,
            "regarding": {
                "apiVersion": sr_model.API_VERSION,
                "kind": sr_model.KIND,
                "name": sr_name,
                "uid": sr_uid,
            },
        }
