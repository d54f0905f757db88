"""Events on the SpecialResource, one per transition and never one per reconcile.

Every Event but one is found by comparing the previous status with the new one, so
recomputing the status from an unchanged world — or an operator restart, which reads the
status back from the object — produces none. The exception, ``ObjectsRemoved``
(``objects_removed``), is built after the deletions, from those the API server carried
out: one it answered "already gone" was deleted by an earlier pass while the cache still
showed it, and that pass reported it, so each deletion is reported once too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sro.model import desired
from sro.model import specialresource as sr_model
from sro.status import conditions

STATE_COMPLETED = "StateCompleted"
STATE_FAILED = "StateFailed"
KERNEL_GROUP_ADDED = "KernelGroupAdded"
KERNEL_GROUP_REMOVED = "KernelGroupRemoved"
CONFLICT_FOUND = "ConflictFound"
OBJECTS_REMOVED = "ObjectsRemoved"
RENDER_WARNINGS = "RenderWarnings"
FOREIGN_OBJECT = "ForeignObjectIgnored"

_LISTED_MAX = 5


@dataclass(frozen=True, kw_only=True)
class Event:
    """An Event to post about the SpecialResource (the engine fills in the object and time)."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


def _rows(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(r.get("name", "")): r for r in status.get("states") or ()}


def _failing(row: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(f.get("node", "")): str(f.get("reason", "")) for f in (row or {}).get("failingNodes") or ()}


def _kernels(status: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    return {
        (str(r.get("kernel", "")), str(r.get("os", ""))): int(r.get("nodes", 0))
        for r in status.get("kernels") or ()
    }


def _degraded_reason(status: Mapping[str, Any]) -> str:
    found = conditions.find(status.get("conditions") or (), conditions.DEGRADED)
    return str(found.get("reason", "")) if found and found.get("status") == "True" else ""


def _listing(refs: Sequence[desired.ObjectRef]) -> str:
    shown = ", ".join(str(r) for r in refs[:_LISTED_MAX])
    more = len(refs) - _LISTED_MAX
    return f"{shown} and {more} more" if more > 0 else shown


def state_events(previous: Mapping[str, Any], current: Mapping[str, Any]) -> list[Event]:
    """A state completed on every node; a state failed on a node (named, first 10)."""
    events = []
    before = _rows(previous)
    for name, row in _rows(current).items():
        old = before.get(name)
        total = (row.get("nodes") or {}).get("total", 0)
        if row.get("phase") == "Complete" and (old is None or old.get("phase") != "Complete"):
            events.append(
                Event(type="Normal", reason=STATE_COMPLETED, message=f"{name} is complete on {total} nodes")
            )
        was = _failing(old)
        for node, reason in _failing(row).items():
            if node not in was:
                events.append(
                    Event(type="Warning", reason=STATE_FAILED, message=f"{name} failed on {node}: {reason}")
                )
    return events


def kernel_events(previous: Mapping[str, Any], current: Mapping[str, Any]) -> list[Event]:
    """Kernel groups that appeared or disappeared among the selected nodes."""
    if "kernels" not in previous:
        return []
    before, after = _kernels(previous), _kernels(current)
    events = [
        Event(
            type="Normal",
            reason=KERNEL_GROUP_ADDED,
            message=f"kernel {kernel} on {os} added: {after[(kernel, os)]} nodes",
        )
        for kernel, os in sorted(after.keys() - before.keys())
    ]
    events += [
        Event(
            type="Normal",
            reason=KERNEL_GROUP_REMOVED,
            message=f"kernel {kernel} on {os} removed: no selected node runs it; its objects are deleted",
        )
        for kernel, os in sorted(before.keys() - after.keys())
    ]
    return events


def render_warnings(
    previous: Mapping[str, Any], current: Mapping[str, Any], *, warnings: Sequence[str]
) -> tuple[Event, ...]:
    """One Warning Event per SpecialResource generation for what the render skipped or
    ignored (an optional object of an unserved kind, a legacy annotation): the first status
    of a generation records it, so it is said once, not on every pass."""
    if not warnings or previous.get("observedGeneration") == current.get("observedGeneration"):
        return ()
    shown = "; ".join(warnings[:_LISTED_MAX])
    more = len(warnings) - _LISTED_MAX
    text = f"{shown} (and {more} more)" if more > 0 else shown
    return (Event(type="Warning", reason=RENDER_WARNINGS, message=text),)


def foreign_object(ref: desired.ObjectRef, *, sr_name: str) -> Event:
    """An object carrying this SpecialResource's owner label that sro did not make."""
    return Event(
        type="Warning",
        reason=FOREIGN_OBJECT,
        message=f"{ref} is labelled {sr_model.OWNER_LABEL}={sr_name} but is not controlled by this "
        "SpecialResource: ignored, never written, counted or deleted",
    )


def transitions(previous: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[Event, ...]:
    """Every Event the change from ``previous`` to ``current`` status calls for."""
    events = [*state_events(previous, current), *kernel_events(previous, current)]
    conflict = "ConflictingNodeSelector"
    if _degraded_reason(current) == conflict and _degraded_reason(previous) != conflict:
        found = conditions.find(current.get("conditions") or (), conditions.DEGRADED) or {}
        events.append(Event(type="Warning", reason=CONFLICT_FOUND, message=str(found.get("message", ""))))
    return tuple(events)


def objects_removed(
    removed: Sequence[desired.ObjectRef], *, absent: Collection[desired.ObjectRef] = ()
) -> tuple[Event, ...]:
    """The ``ObjectsRemoved`` Event for the ``removed`` objects (those no longer desired)
    a pass deleted, leaving out the ``absent`` ones, whose deletion answered "already
    gone"; none when nothing is left. Each pass's Events are named by the status it starts
    from, so reporting an absent one would report one deletion once per pass while a
    cache lags."""
    refs = sorted(ref for ref in removed if ref not in absent)
    if not refs:
        return ()
    noun = "object" if len(refs) == 1 else "objects"
    return (
        Event(type="Normal", reason=OBJECTS_REMOVED, message=f"deleted {len(refs)} {noun}: {_listing(refs)}"),
    )


REPORTING_CONTROLLER = "sro.dev/special-resource-operator"
EVENTS_NAMESPACE = "default"
"""Events about a cluster-scoped SpecialResource live here, as client-go's recorder puts
them, where ``kubectl describe`` finds them."""
NOTE_MAX = 1024  # events.k8s.io/v1 refuses notes over 1 KiB


NAME_MAX = 253  # an Event's name is a DNS subdomain
_SUFFIX_LEN = 16


def name(event: Event, *, sr_name: str, sr_uid: str, transition: str) -> str:
    """The Event's name: the SpecialResource's name and a digest of which SpecialResource
    (its uid, so a namesake recreated later never collides), which transition
    (``transition``: the fingerprint of the status written that recorded it,
    ``summary.fingerprint``) and which Event of it.

    The same Event of the same transition always gets the same name, so a POST sent
    again after a lost answer, or by a reconcile retried before the cache showed the
    written status, is refused as AlreadyExists instead of posted twice; a later
    transition to the same phase has new condition transition times, so another name.
    """
    key = "\x00".join((sr_uid, transition, event.type, event.reason, event.message))
    digest = hashlib.sha256(key.encode()).hexdigest()[:_SUFFIX_LEN]
    return f"{sr_name[: NAME_MAX - _SUFFIX_LEN - 1]}.{digest}"


def body(
    event: Event, *, name: str, sr_name: str, sr_uid: str, instance: str, now: datetime
) -> dict[str, Any]:
    """The events.k8s.io/v1 body of ``event`` about SpecialResource ``sr_name``.

    ``name`` is the Event's own (``name()`` above); ``instance`` is the reporting replica
    (its pod name).
    """
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": EVENTS_NAMESPACE},
        "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "reportingController": REPORTING_CONTROLLER,
        "reportingInstance": instance[:128],
        "action": "Reconcile",
        "reason": event.reason,
        "note": event.message[:NOTE_MAX],
        "type": event.type,
        "regarding": {
            "apiVersion": sr_model.API_VERSION,
            "kind": sr_model.KIND,
            "name": sr_name,
            "uid": sr_uid,
        },
    }
