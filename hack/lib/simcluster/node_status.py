"""The simulated kubelets' node status report: once per node per period, as a kubelet's.

A kubelet whose node changed nothing still rewrites the Node's status every
``nodeStatusReportFrequency`` (5 minutes by default), checked every
``nodeStatusUpdateFrequency`` (10 s): each node, once every 300 to 310 s, and every node
watcher (the scheduler, the controllers, an operator) reads the whole Node each time. The
lease (kwok's, every 30 s) keeps the node Ready; this report only costs its watchers.

kwok's delayed Stage did this before, and could not keep it at one a node: every event of
a node replaces the node's pending job, and a job taken by kwok's worker while an event
arrives stays queued beside the new one, with nothing left to cancel either. The chains
never merge again, so a node collects two, three, more of them: 5,000 nodes sent 50 status
patches a second ten minutes after they were made, three times a kubelet's rate, and more
the more the nodes were written. Here each node has one due time.

A node reports only while it is Ready and kwok's (``kwok.x-k8s.io/node: fake``): a node
that went NotReady comes back through kwok's initialize Stage, which writes its status
itself. Pausing this process with kwok stops both of a kubelet's signs of life
(``converge_idle``'s heartbeat gap).
"""

from __future__ import annotations

import asyncio
import datetime
import heapq
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from simcluster import inventory, kube, nodes

PERIOD = 300.0
"""Seconds between two reports of one node: a kubelet's ``nodeStatusReportFrequency``."""
JITTER = 10.0
"""Up to this much later each time: a kubelet looks every ``nodeStatusUpdateFrequency``."""
WORKERS = 8
"""Reports in flight at once: at 5,000 nodes 17 a second, each a round trip to a busy API server."""

log = logging.getLogger("devsim.status")


def kwoks(node: dict[str, Any]) -> bool:
    """Whether kwok runs the node (its annotation selector's annotation)."""
    annotations = node["metadata"].get("annotations") or {}
    return bool(annotations.get(inventory.KWOK_ANNOTATION) == inventory.KWOK_MANAGED)


def reporting(node: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    """Whether the node reports now: there, kwok's, and Ready."""
    return node is not None and kwoks(node) and nodes.ready(node)


def report(node: dict[str, Any], *, now: datetime.datetime) -> dict[str, Any]:
    """The status patch of one report (strategic: conditions merge by type): every
    condition's ``lastHeartbeatTime`` set to ``now``, nothing else changed."""
    stamp = now.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = (node.get("status") or {}).get("conditions") or []
    return {
        "status": {
            "conditions": [
                {"type": c["type"], "lastHeartbeatTime": stamp}
                for c in conditions
                if isinstance(c, dict) and c.get("type")
            ]
        }
    }


class Schedule:
    """When each node reports next: the first time somewhere within a period of being
    seen (kubelets started at different times), then a period and up to a jitter after
    each report."""

    def __init__(
        self, *, period: float = PERIOD, jitter: float = JITTER, rng: random.Random | None = None
    ) -> None:
        self.period = period
        self.jitter = jitter
        self._rng = rng or random.Random()
        self._due: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._due)

    def seen(self, name: str, *, now: float) -> bool:
        """Schedules a node not seen before (True); one already due keeps its time."""
        if name in self._due:
            return False
        self._put(name, now + self._rng.uniform(0.0, self.period))
        return True

    def gone(self, name: str) -> None:
        self._due.pop(name, None)  # its heap entry is skipped when it comes up

    def next_due(self) -> float | None:
        """The earliest due time, None with no node."""
        while self._heap:
            due, name = self._heap[0]
            if self._due.get(name) == due:
                return due
            heapq.heappop(self._heap)  # a node gone, or one rescheduled
        return None

    def take(self, *, now: float) -> list[str]:
        """The nodes due by ``now``, each rescheduled a period and a jitter from now."""
        out = []
        while (due := self.next_due()) is not None and due <= now:
            _, name = heapq.heappop(self._heap)
            out.append(name)
            self._put(name, now + self.period + self._rng.uniform(0.0, self.jitter))
        return out

    def _put(self, name: str, due: float) -> None:
        self._due[name] = due
        heapq.heappush(self._heap, (due, name))


class Reporter:
    """devsim's part: the nodes it watches scheduled, their reports out. ``known`` is
    devsim's own view of the nodes, by name, read when a report is due."""

    def __init__(
        self,
        client: kube.Kube,
        known: Mapping[str, dict[str, Any]],
        *,
        schedule: Schedule | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.known = known
        self.schedule = schedule or Schedule()
        self.clock = clock
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self._changed = asyncio.Event()

    def on_node(self, kind: str, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        if kind == "DELETED" or not kwoks(node):
            self.schedule.gone(name)
        elif self.schedule.seen(name, now=self.clock()):
            self._changed.set()  # it may be due before the one the timer waits for

    async def timer(self) -> None:
        """Hands each node to the workers when it is due."""
        while True:
            due = self.schedule.next_due()
            wait = None if due is None else max(0.0, due - self.clock())
            self._changed.clear()
            if wait is None or wait > 0:
                try:
                    await asyncio.wait_for(self._changed.wait(), timeout=wait)
                    continue  # a node came: it may be due sooner
                except TimeoutError:
                    pass
            for name in self.schedule.take(now=self.clock()):
                self.queue.put_nowait(name)

    async def worker(self) -> None:
        while True:
            name = await self.queue.get()
            node = self.known.get(name)
            if not reporting(node):
                continue  # gone or NotReady (kwok's initialize Stage brings it back): no report
            try:
                now = datetime.datetime.now(datetime.UTC)
                await self.client.patch(f"/api/v1/nodes/{name}/status", report(node, now=now), strategic=True)
            except kube.ApiError as e:
                if e.status != 404:
                    log.warning("node %s: status report refused: %s", name, e)
            except Exception:  # the next one comes a period later, as a kubelet's would
                log.exception("node %s: status report failed", name)
