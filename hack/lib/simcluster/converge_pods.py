"""Pods until done, timed: what the floor and sro's chain of states count as a pod done.

A pod is done when Ready, or Succeeded if it runs to completion (a validation), and a
driver only once its build has ended (``pod_logs.BUILT_AT``: its ready line appears then,
and sro waits for that line). ``Tally`` keeps the count from a list and the watch events
after it (the pod garbage collector may take finished pods before the end); ``wait_pods``
watches a namespace until enough are done, ``PodTimes`` notes each state's fastest pod,
and ``chain_seconds`` sums those along the longest ``after`` path of the states.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simcluster import kube, pod_logs

JSON = dict[str, Any]

RUN_TO_COMPLETION = ("Never", "OnFailure")


def pod_done(pod: Mapping[str, Any]) -> bool:
    """Ready; for a run-to-completion pod (a validation), Succeeded: it is Ready while it
    runs, and the state after it cannot start before it has succeeded."""
    status = pod.get("status") or {}
    if status.get("phase") == "Succeeded":
        return True
    if (pod.get("spec") or {}).get("restartPolicy") in RUN_TO_COMPLETION:
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


STATE_LABEL = "sro.dev/state"


@dataclass
class PodTimes:
    """What ``wait_pods`` saw: the curve of (seconds since start, pods done) at every
    change, and per state (the pods' ``sro.dev/state`` label) its fastest pod from first
    seen to done (the chain's figure when one node runs alone)."""

    curve: list[tuple[float, int]] = field(default_factory=lambda: [(0.0, 0)])
    fastest: dict[str, float] = field(default_factory=dict)
    _seen: dict[str, float] = field(default_factory=dict)
    _states: dict[str, str] = field(default_factory=dict)

    def saw(self, pod: Mapping[str, Any], *, done: bool) -> None:
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid"))
        self._seen.setdefault(uid, time.monotonic())
        state = (meta.get("labels") or {}).get(STATE_LABEL)
        if state:
            self._states[uid] = str(state)
        if done:
            self.finished(uid)

    def finished(self, uid: str) -> None:
        """The pod ``uid`` (seen before) is done now."""
        now = time.monotonic()
        first = self._seen.setdefault(uid, now)
        state = self._states.get(uid)
        if state:
            self.fastest[state] = min(self.fastest.get(state, now - first), now - first)


def chain_seconds(fastest: Mapping[str, float], after: Mapping[str, Sequence[str]]) -> float:
    """The longest path through the states (``after``: each state's predecessors) summing
    each state's ``fastest`` pod; states with no pods (cluster-wide, or none ran) add 0."""
    ends: dict[str, float] = {}

    def end(state: str, path: tuple[str, ...] = ()) -> float:
        if state not in ends:
            if state in path:
                raise ValueError(f"the states' after edges form a cycle through {state}")
            start = max((end(a, (*path, state)) for a in after.get(state, ())), default=0.0)
            ends[state] = start + fastest.get(state, 0.0)
        return ends[state]

    return max((end(s) for s in after), default=0.0)


def build_left(pod: Mapping[str, Any], *, wall: float) -> float:
    """Seconds until the pod's driver build ends (``pod_logs.BUILT_AT``, set by devsim at
    admission; the ready line appears then), 0 if it has ended or the pod builds nothing."""
    at = pod_logs.read_stamp(((pod.get("metadata") or {}).get("annotations") or {}).get(pod_logs.BUILT_AT))
    return max(0.0, at - wall) if at is not None else 0.0


@dataclass
class Tally:
    """Which pods are done, from a list and the watch events after it. A pod seen
    Succeeded stays done once deleted (the pod garbage collector takes finished pods while
    the rest still run, and a watch's list after that no longer has them); a Ready pod
    counts only while it exists and is Ready, and a building driver only once its build
    has ended (``building``, released by ``release`` when its time comes: no event says so)."""

    done: dict[str, bool] = field(default_factory=dict)
    succeeded: set[str] = field(default_factory=set)
    building: dict[str, float] = field(default_factory=dict)  # uid -> wall time its build ends
    count: int = 0  # the done ones, kept as events come (a sum per event would be quadratic)

    def _note(self, pod: Mapping[str, Any]) -> str:
        uid = str(pod["metadata"]["uid"])
        if (pod.get("status") or {}).get("phase") == "Succeeded":
            self.succeeded.add(uid)
        return uid

    def _done(self, uid: str, pod: Mapping[str, Any], *, wall: float) -> bool:
        """Done now; a Ready pod still building is noted in ``building`` instead."""
        self.building.pop(uid, None)
        if not pod_done(pod):
            return False
        left = build_left(pod, wall=wall)
        if left > 0:
            self.building[uid] = wall + left
            return False
        return True

    def listed(self, items: Iterable[Mapping[str, Any]], *, wall: float | None = None) -> None:
        wall = time.time() if wall is None else wall
        self.done = {uid: True for uid in self.succeeded}
        self.building.clear()
        for pod in items:
            uid = self._note(pod)
            self.done[uid] = uid in self.succeeded or self._done(uid, pod, wall=wall)
        self.count = sum(self.done.values())

    def event(self, kind: str, pod: Mapping[str, Any], *, wall: float | None = None) -> tuple[bool, bool]:
        """Fold one watch event in; (done before, done now) for that pod."""
        wall = time.time() if wall is None else wall
        uid = self._note(pod)
        was = self.done.pop(uid, False)
        if kind == "DELETED":
            self.building.pop(uid, None)
            now = uid in self.succeeded
        else:
            now = uid in self.succeeded or self._done(uid, pod, wall=wall)
        if now or kind != "DELETED":
            self.done[uid] = now
        self.count += int(now) - int(was)
        return was, now

    def release(self, *, wall: float | None = None) -> list[str]:
        """The building pods whose build has ended by ``wall``, now counted done."""
        wall = time.time() if wall is None else wall
        ended = [uid for uid, at in self.building.items() if at <= wall]
        for uid in ended:
            del self.building[uid]
            self.count += int(not self.done.get(uid, False))
            self.done[uid] = True
        return ended

    def next_release(self, *, wall: float | None = None) -> float | None:
        """Seconds until the next build ends; None if no Ready pod is building."""
        wall = time.time() if wall is None else wall
        return max(0.0, min(self.building.values()) - wall) if self.building else None


async def wait_pods(
    client: kube.Kube, *, namespace: str, expected: int, started: float, within: float
) -> PodTimes:
    """Watch the namespace's pods until ``expected`` of them are done (``Tally``), waking
    when a Ready driver's build ends as well as on every event."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    tally = Tally()
    times = PodTimes()
    curve = times.curve
    deadline = started + within

    def released() -> None:
        for uid in tally.release():
            times.finished(uid)
            curve.append((time.monotonic() - started, tally.count))

    while True:
        listed = await client.get(path, request_seconds=120)
        tally.listed(listed["items"])
        for p in listed["items"]:
            times.saw(p, done=tally.done[p["metadata"]["uid"]])
        version = listed["metadata"]["resourceVersion"]
        curve.append((time.monotonic() - started, tally.count))
        if tally.count >= expected:
            return times
        queue: asyncio.Queue[JSON | None] = asyncio.Queue()

        async def feed(version: str = version, queue: asyncio.Queue[JSON | None] = queue) -> None:
            try:
                async for event in client.watch(path, resource_version=version, timeout_seconds=60):
                    queue.put_nowait(event)
            finally:
                queue.put_nowait(None)  # the stream ended (or failed: the task says how)

        feeder = asyncio.create_task(feed())
        try:
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), timeout=tally.next_release())
                except TimeoutError:
                    event = {"type": "BOOKMARK"}  # a build ended: no event says so
                if event is None:
                    break
                if event.get("type") != "BOOKMARK":
                    pod = event["object"]
                    was, now = tally.event(event["type"], pod)
                    if event["type"] != "DELETED":
                        times.saw(pod, done=now)
                    if now != was:
                        curve.append((time.monotonic() - started, tally.count))
                released()
                if tally.count >= expected:
                    return times
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{tally.count}/{expected} pods done after {within:g}s")
            try:
                await feeder
            except kube.ApiError as exc:
                if exc.status != 410:
                    raise
        finally:
            feeder.cancel()
            await asyncio.gather(feeder, return_exceptions=True)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{tally.count}/{expected} pods done after {within:g}s")
