"""Writing a SpecialResource's status and Events: only when something changed.

A reconcile runs many times for every change that matters; writing status or an Event
each time would turn every requeue into API traffic (and an operator restart into a
burst of writes). So:

* status goes through the status subresource, by server-side apply under the operator's
  field manager (fields sro stops setting disappear), and only when the computed status
  differs from the one the cache holds (``sro.status.summary.status_changed``);
* Events (events.k8s.io/v1, built by ``sro.status.events.body``) are the planner's
  transitions, posted just before the status that records the transition is written
  (``record``). An operator killed between the two posts them again when it starts, so
  none is lost (a Warning such as ``UpgradeFailed`` is what alerting watches); each is
  named by the status it moves away from, so that second POST, or one of a pass retried
  after a failed status write, is refused as existing instead of posted twice.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from sro import errors
from sro.engine import ports
from sro.model import bodies, desired
from sro.model import specialresource as sr_model
from sro.status import events, summary

log = structlog.get_logger(__name__)


def _ref(name: str) -> desired.ObjectRef:
    return desired.ObjectRef(api_version=sr_model.API_VERSION, kind=sr_model.KIND, namespace="", name=name)


class StatusWriter:
    """Writes status and Events for SpecialResources through the engine's writer."""

    def __init__(
        self,
        writer: ports.Writer,
        *,
        instance: str | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._writer = writer
        self._instance = instance or os.environ.get("POD_NAME") or socket.gethostname()
        self._clock = clock
        self._versions: dict[str, int] = {}  # name -> resourceVersion its last status write returned
        # name -> statuses this writer sent or is sending: what their watch events bring back
        self._sent: dict[str, list[Mapping[str, Any]]] = {}

    def written_version(self, name: str) -> int:
        """The resourceVersion the last status write to ``name`` returned; 0 if none (or not
        a number: versions are compared only where the API server hands out integers)."""
        return self._versions.get(name, 0)

    def forget(self, name: str) -> None:
        """SpecialResource ``name`` is gone: nothing of its writes to remember."""
        for memory in (self._versions, self._sent):
            memory.pop(name, None)

    def is_own(self, name: str, body: Mapping[str, Any]) -> bool:
        """Whether the status of SpecialResource ``body`` is one this writer wrote: its last
        write or the one on its way, coming back through the watch (by content, or by the
        resourceVersion the write returned, should the server have normalised it), or
        anything older than its last write. Such a change needs no reconcile. A status
        someone else wrote after it (a former leader's write that was on the wire when its
        lease ran out, a hand edit) does: the reconcile writes the true status back."""
        status: Mapping[str, Any] = body.get("status") or {}
        if any(not summary.status_changed(status, sent) for sent in self._sent.get(name, ())):
            return True
        return 0 < bodies.version_of(body) <= self._versions.get(name, 0)

    async def _write(self, *, name: str, status: Mapping[str, Any]) -> None:
        """Apply ``status`` to SpecialResource ``name`` (``record`` decided it changed)."""
        sent = self._sent.setdefault(name, [])
        sent.append(status)  # its watch event can come before its answer
        try:
            answer = await self._writer.apply_status(_ref(name), status)
        except BaseException:
            sent.remove(status)
            raise
        del sent[:-1]  # the last write alone, from now on
        self._versions[name] = bodies.version_of(answer)
        log.debug(
            "status written", sr=name, state=status.get("state", ""), resource_version=self._versions[name]
        )

    async def record(
        self,
        *,
        name: str,
        uid: str,
        current: Mapping[str, Any],
        status: Mapping[str, Any],
        events_: Sequence[events.Event],
    ) -> bool:
        """A transition from ``current`` to ``status``: its Events, then the status; nothing
        when the status is unchanged. True if the status was written.

        The Events are named by ``current`` (its fingerprint, which carries its conditions'
        transition times, so a later transition to the same phase has other names): any
        pass that starts again from ``current`` (after a kill, a lost answer or a refused
        status write) names the same Events the same, and the API server keeps one.
        """
        if not summary.status_changed(current, status):
            return False
        if events_:
            await self.emit(
                sr_name=name, sr_uid=uid, events_=events_, transition=f"from/{summary.fingerprint(current)}"
            )
        await self._write(name=name, status=status)
        return True

    async def emit(
        self, *, sr_name: str, sr_uid: str, events_: Sequence[events.Event], transition: str
    ) -> int:
        """Post one Event per entry; one that cannot be written is logged, not raised.

        Events are advisory: losing one must never fail the reconcile that caused it.
        Names are those of ``events.name`` for ``transition``: what the Events are about
        (the status a transition leaves, see ``record``; or something said once whatever
        the status, such as a foreign object), so the same one is posted once.
        """
        written = 0
        for event in events_:
            body = events.body(
                event,
                name=events.name(event, sr_name=sr_name, sr_uid=sr_uid, transition=transition),
                sr_name=sr_name,
                sr_uid=sr_uid,
                instance=self._instance,
                now=self._clock(),
            )
            try:
                await self._writer.post_event(body)
                written += 1
            except errors.NotLeader:
                raise  # not a lost Event: this process must stop writing
            except Exception as exc:  # advisory write, see docstring
                log.warning("event not written", sr=sr_name, reason=event.reason, error=str(exc))
        return written
