"""Turning cache changes into work-queue keys.

Pure functions of a change, given an ``enqueue`` callback (the queue's ``add``):

* ``primary``: a primary object's change enqueues its own key (its name; "ns/name"
  for a namespaced primary), unless only its status changed, to one this process wrote.
* ``owned``: an owned object's change enqueues its owner, read from the label
  ``sro.dev/owner`` of the old and of the new object (both: an object moving between
  owners concerns both). A namespaced primary owns objects in its own namespace, so
  its key is "<the object's namespace>/<owner>". A change that leaves the projection
  as it was but for its resourceVersion enqueues nothing (an annotation on a pod, a
  pod condition no verdict reads, a Ready the node controller took or gave back); for a
  kind whose status no reconcile reads, neither does a change of its status alone (a
  DaemonSet's counts move with every pod on every node).
* ``nodes``: a Node change enqueues whatever the engine's mapper says the old or the
  new node concerns, but only if ``NodeView.relevant()`` changed: heartbeats, lease
  renewals and the node controller's readiness flips touch nothing a reconcile reads
  (but a driver upgrade's, which looks again on its own), and enqueue nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NewType

from sro.cache import store as store_
from sro.model import specialresource as sr_model
from sro.model import views

QueueKey = NewType("QueueKey", str)
"""A work-queue key: the primary object's name ("ns/name" when namespaced). Only the
functions here and the mappers make one, so a stray string is never reconciled."""
Enqueue = Callable[[QueueKey], None]
Handler = Callable[[store_.Change[Any]], None]
NodeMapper = Callable[[views.NodeView | None, views.NodeView | None], set[QueueKey]]
Mapper = Callable[[Any, Any], set[QueueKey]]
"""(old view or None, new view or None) -> the keys the change concerns."""


def key_of(view: Any) -> QueueKey:
    namespace = getattr(view, "namespace", "")
    return QueueKey(f"{namespace}/{view.name}" if namespace else str(view.name))


_VOLATILE = frozenset({"resourceVersion", "managedFields"})


def _beyond_status(view: Any) -> object:
    """What of an object a reconcile acts on when it reads no status (a primary, an owned
    kind judged otherwise): everything but its status (and the metadata every write
    changes). Views without a body compare whole."""
    body = getattr(view, "body", None)
    if not isinstance(body, dict):
        return view
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in _VOLATILE}
    return ({k: v for k, v in body.items() if k not in ("status", "metadata")}, meta)


def _status_alone(old: Any, new: Any) -> bool:
    """Whether a change (of a view with a body) touched its status alone."""
    return old is not None and new is not None and _beyond_status(old) == _beyond_status(new)


OwnStatus = Callable[[Any], bool]
"""Whether a primary's view shows a status this process wrote (``primary``)."""


def primary(enqueue: Enqueue, *, own_status: OwnStatus | None = None) -> Handler:
    """A primary's change enqueues it, except a change of its status alone that
    ``own_status`` says is the reconcile's own output coming back (controller-runtime's
    GenerationChangedPredicate, with labels, annotations, finalizers and deletion still
    counting): at a thousand nodes each such pass costs a whole plan for nothing. A status
    someone else wrote is enqueued, so the true one is written back; without
    ``own_status`` every status-only change is taken for the process's own."""

    def handle(change: store_.Change[Any]) -> None:
        old, new = change.old, change.new
        if _status_alone(old, new) and (own_status is None or own_status(new)):
            return
        view = new if new is not None else old
        if view is not None:
            enqueue(key_of(view))

    return handle


def _same_but_version(old: Any, new: Any) -> bool:
    """Two projections (frozen records such as ``PodView``) that differ in their
    ``resource_version`` alone: what changed is nothing the projection keeps (a pod's
    annotations, a condition no verdict reads), so no reconcile could act on it. A pod
    is compared as the planner judges it (``PodView.judged``: a withdrawn Ready is
    Ready)."""
    if old is None or new is None or not dataclasses.is_dataclass(old) or isinstance(old, type):
        return False
    if isinstance(old, views.PodView) and isinstance(new, views.PodView):
        return old.judged() == new.judged()
    if not hasattr(old, "resource_version"):
        return False
    return bool(dataclasses.replace(old, resource_version=new.resource_version) == new)


def owned(enqueue: Enqueue, *, namespaced_owner: bool = False, status_read: bool = True) -> Handler:
    """An owned object's change enqueues its owner (by the owner label of its old or new
    version), unless its projection shows no change but its resourceVersion, or, for a
    kind whose status no reconcile reads (``status_read`` false), none but its status."""

    def handle(change: store_.Change[Any]) -> None:
        old, new = change.old, change.new
        if _same_but_version(old, new):
            return
        if not status_read and _status_alone(old, new):
            return
        owners: set[QueueKey] = set()
        for view in (change.old, change.new):
            labels = getattr(view, "labels", None) or {}
            owner = labels.get(sr_model.OWNER_LABEL)
            if owner:
                owners.add(
                    QueueKey(f"{getattr(view, 'namespace', '')}/{owner}" if namespaced_owner else owner)
                )
        for owner in sorted(owners):
            enqueue(owner)

    return handle


def nodes(enqueue: Enqueue, mapper: NodeMapper) -> Handler:
    def handle(change: store_.Change[Any]) -> None:
        old, new = change.old, change.new
        if old is not None and new is not None and old.relevant() == new.relevant():
            return
        for key in sorted(mapper(old, new)):
            enqueue(key)

    return handle


def mapped(enqueue: Enqueue, mapper: Mapper) -> Handler:
    """Any object's change -> whatever keys ``mapper`` names (e.g. recipe ConfigMaps -> users)."""

    def handle(change: store_.Change[Any]) -> None:
        for key in sorted(mapper(change.old, change.new)):
            enqueue(key)

    return handle
