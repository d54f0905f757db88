"""What the engine says about a SpecialResource besides its plan: the status it writes and
the Events that record it, once each.

Kept apart from the reconcile's steps (``reconciler``) because saying things once needs
memory of what was said: the status this engine last wrote (a reconcile can run before
the watch brings that write back, and must not write it and post its Events twice), and
which foreign objects were already reported. The reconcile decides *what* to say
(``sro.plan``); this keeps it from being said twice, and reports a pass that failed on
something no step expected.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import structlog

from sro.cache import projections
from sro.engine import ports, status_writes
from sro.model import bodies
from sro.model import specialresource as sr_model
from sro.plan import planner
from sro.status import conditions, events, summary

log = structlog.get_logger(__name__)

FOREIGN_NOTED_MAX = 10_000
"""Foreign objects remembered as reported; past it the memory is cleared (each is said again)."""
FOREIGN_SAID_PER_PASS = 10
"""New foreign objects said in one pass (each is an Event POST); the rest wait for later passes."""


@dataclasses.dataclass(frozen=True)
class Written:
    """A status this engine wrote: what the cache showed then, what was written, and the
    resourceVersion the write returned (0 if the server's versions are not numbers)."""

    cached: Mapping[str, Any]
    status: Mapping[str, Any]
    version: int


def newest_status(body: Mapping[str, Any], written: Written | None) -> Mapping[str, Any]:
    """The status of SpecialResource ``body`` as of this engine's last write ``written``.

    The cached object is older than that write when its resourceVersion is lower: then
    the status written is the truth, whatever the cache shows, including a status older
    still that the watch delivers late (two writes in quick succession: the cache shows
    the first after the second was sent; judged by content alone it would look new, and
    the second write's transition would be made, and announced, again). Without numeric
    versions, the cache lags while it still shows what it showed when the write was made.
    """
    cached: Mapping[str, Any] = body.get("status") or {}
    if written is None:
        return cached
    version = bodies.version_of(body)
    if written.version and version:
        return written.status if version < written.version else cached
    if not summary.status_changed(cached, written.cached) and summary.status_changed(cached, written.status):
        return written.status
    return cached


class Reporter:
    """Status and Events of SpecialResources, each said once (see module docstring)."""

    def __init__(
        self, *, reader: ports.Reader, status: status_writes.StatusWriter, clock: Callable[[], datetime]
    ) -> None:
        self._reader = reader
        self._status = status
        self._clock = clock
        self._foreign_noted: set[tuple[str, str, str]] = set()
        self._written: dict[str, Written] = {}  # name -> this engine's last status write

    def forget(self, name: str) -> None:
        """The SpecialResource is gone: nothing of it to remember."""
        self._written.pop(name, None)
        self._status.forget(name)

    def previous(self, name: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """The status this SpecialResource has now: the cache's, unless the cache has not yet
        shown this engine's last status write (a reconcile can run before the watch brings
        it back), in which case the status written (``newest_status``). Without this, a
        burst of reconciles right after a transition would write the status and post its
        Events twice."""
        return newest_status(body, self._written.get(name))

    async def conclude(
        self,
        name: str,
        body: Mapping[str, Any],
        *,
        previous: Mapping[str, Any],
        status: Mapping[str, Any],
        events_: Sequence[events.Event] = (),
        requeue_after: float | None = None,
    ) -> float | None:
        """The Events and the status of the transition (only if the status changed); the requeue."""
        uid = str((body.get("metadata") or {}).get("uid", ""))
        written = await self._status.record(
            name=name, uid=uid, current=previous, status=status, events_=events_
        )
        if written:
            self._written[name] = Written(
                cached=dict(body.get("status") or {}),
                status=dict(status),
                version=self._status.written_version(name),
            )
        return requeue_after

    async def unexpected(self, key: str, exc: BaseException) -> None:
        """Say on the SpecialResource that its pass failed on something no step expected (a
        bug, or an input no bound foresaw): Degraded ``ReconcileError`` naming the exception,
        so it shows where people look and not only in the log. The controller still counts
        the failure and retries with backoff; a status that cannot be written is logged."""
        body = self._reader.special_resource(key)
        if body is None:
            return
        previous = self.previous(key, body)
        generation = int((body.get("metadata") or {}).get("generation") or 0)
        refused = planner.plan_refused(
            previous=previous,
            reason=conditions.RECONCILE_ERROR,
            message=f"the reconcile failed unexpectedly ({type(exc).__name__}: {exc}); retrying with backoff",
            generation=generation,
            now=self._clock(),
            recheck=False,
        )
        try:
            await self.conclude(key, body, previous=previous, status=refused.status)
        except Exception as write_error:  # the original failure is what the caller raises
            log.warning("could not report the failure on the SpecialResource", sr=key, error=str(write_error))

    async def foreign(self, sr: sr_model.SpecialResource, views: Sequence[projections.ObjectView]) -> None:
        """Objects labelled as this SpecialResource's that are not: each said once, in the
        log and as an Event named by the object's uid (posted again after a restart, it is
        refused as existing). At most ``FOREIGN_SAID_PER_PASS`` new ones a pass, so a
        tenant's flood of them costs a pass a few Events, not one POST each; the rest are
        said in later passes. The memory of what was said is bounded, so a flood larger
        than it is said again."""
        said = 0
        for view in views:
            key = (sr.name, str(view.ref), view.uid)
            if key in self._foreign_noted:
                continue
            if said == FOREIGN_SAID_PER_PASS:
                return
            said += 1
            if len(self._foreign_noted) >= FOREIGN_NOTED_MAX:
                self._foreign_noted.clear()
            self._foreign_noted.add(key)
            log.warning(
                "object labelled as this SpecialResource's but not made by it: ignored, never written",
                sr=sr.name,
                object=str(view.ref),
            )
            event = events.foreign_object(view.ref, sr_name=sr.name)
            await self._status.emit(
                sr_name=sr.name, sr_uid=sr.uid, events_=(event,), transition=f"foreign/{view.uid}"
            )
