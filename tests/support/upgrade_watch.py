"""An independent invariant watcher for driver upgrades: its own processes, its own view.

It runs two ``kubectl get --watch`` processes (Nodes, and the Pods of the operand
namespace) on their own connections, folds every event into its own picture, and after
each event checks what must hold at every moment of a rollout:

* at most ``budget`` of the watched nodes are unavailable (unschedulable, or without a
  Ready driver pod);
* no node the watcher saw cordoned by someone else first is uncordoned or loses a pod;
* a workload (the pods of ``workload_namespace``) never has fewer than ``workload_min``
  Ready pods: its PodDisruptionBudget held.

It also counts, per node, the driver pods that went away (each node's driver must be
replaced exactly once) and the times each node was cordoned. Nothing here uses sro's
code: what it records is what the API server told a client, not what sro believes.

Unavailability joins two streams, and either may lag the other by many events: a node
stream behind a pod stream shows a driver pod gone from a node still shown schedulable
that sro had cordoned long before. So cordons and driver pods are replayed in
resourceVersion order (one etcd sequence), each released only once both streams have
passed it: every moment checked is one that happened. The first time too many nodes are
down, the violation carries those nodes' recent history: a failure explains itself.
"""

from __future__ import annotations

import asyncio
import codecs
import heapq
import itertools
import json
import math
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from support import cluster as cluster_mod

NODES, OPERANDS, WORKLOAD = "nodes", "operands", "workload"  # the streams, one kubectl each


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@dataclass
class Watcher:
    cluster: cluster_mod.Cluster
    nodes: frozenset[str]
    namespace: str
    driver_prefix: str
    budget: int
    protected: frozenset[str] = frozenset()  # cordoned by an administrator: never sro's to touch
    workload_namespace: str = ""
    workload_min: int = 0
    workload_ready: dict[str, bool] = field(default_factory=dict)  # pod uid -> Ready
    workload_low: int | None = None  # fewest Ready workload pods seen while armed
    violations: list[str] = field(default_factory=list)
    unschedulable: dict[str, bool] = field(default_factory=dict)
    driver_ready: dict[str, dict[str, bool]] = field(default_factory=dict)  # node -> pod uid -> ready
    replaced: Counter[str] = field(default_factory=Counter)
    cordons: Counter[str] = field(default_factory=Counter)
    evicted_on_protected: list[str] = field(default_factory=list)
    peak: int = 0
    events: int = 0
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _procs: list[asyncio.subprocess.Process] = field(default_factory=list)
    armed: bool = False  # checks start once the picture is complete (both lists seen)
    seen_rv: dict[str, int] = field(default_factory=dict)  # stream -> newest resourceVersion it delivered
    # The replay of cordons and driver pods in resourceVersion order (see the module docstring):
    # (rv, arrival, node, cordoned or (uid, ready; None: gone)), and the picture it has reached.
    _pending: list[tuple[int, int, str, bool | tuple[str, bool | None]]] = field(default_factory=list)
    _arrival: itertools.count[int] = field(default_factory=itertools.count)
    _cordoned_at: dict[str, bool] = field(default_factory=dict)
    _ready_at: dict[str, dict[str, bool]] = field(default_factory=dict)
    _armed_at: int = 0  # the budget is checked on changes after this resourceVersion
    _history: deque[tuple[str, str]] = field(default_factory=lambda: deque(maxlen=400))

    async def start(self) -> None:
        watches = {NODES: ["nodes"], OPERANDS: ["pods", "-n", self.namespace]}
        if self.workload_namespace:
            watches[WORKLOAD] = ["pods", "-n", self.workload_namespace]
        for stream, args in watches.items():
            proc = await asyncio.create_subprocess_exec(
                str(self.cluster.kubectl_path),
                f"--kubeconfig={self.cluster.kubeconfig}",
                "get",
                *args,
                "--watch",
                "--output-watch-events",
                "-o",
                "json",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )
            self._procs.append(proc)
            self._tasks.append(asyncio.create_task(self._read(proc, stream)))

    async def stop(self) -> None:
        for proc in self._procs:
            if proc.returncode is None:
                proc.terminate()
                await proc.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._release(until=math.inf)  # the rollout is over and settled: replay what is left

    async def _read(self, proc: asyncio.subprocess.Process, stream: str) -> None:
        assert proc.stdout is not None
        decoder = json.JSONDecoder()
        text = codecs.getincrementaldecoder("utf-8")()  # a character may straddle two reads
        buffer = ""
        while chunk := await proc.stdout.read(1 << 20):
            buffer += text.decode(chunk)
            at = 0  # decode in place, cut once per chunk: a relist of many nodes stays linear
            while True:
                while at < len(buffer) and buffer[at].isspace():
                    at += 1
                try:
                    event, at = decoder.raw_decode(buffer, at)
                except ValueError:
                    break
                self.take(event, stream)
            buffer = buffer[at:]

    def take(self, event: Mapping[str, Any], stream: str) -> None:
        """Fold one event of ``stream`` into the picture, then replay what both streams
        have passed."""
        self._fold(event, stream)
        self._release(until=min(self.seen_rv.get(NODES, 0), self.seen_rv.get(OPERANDS, 0)))

    def _fold(self, event: Mapping[str, Any], stream: str) -> None:
        obj = event.get("object") or {}
        if str(obj.get("kind", "")).endswith("List"):  # kubectl prints a chunked first list as Lists
            for item in obj.get("items") or ():
                self._fold({"type": event.get("type"), "object": item}, stream)
            return
        kind, kind_of_event = obj.get("kind"), event.get("type")
        meta = obj.get("metadata") or {}
        self.events += 1
        rv_text = str(meta.get("resourceVersion", ""))
        rv = int(rv_text) if rv_text.isdigit() else 0
        self.seen_rv[stream] = max(self.seen_rv.get(stream, 0), rv)
        if kind == "Node" and meta.get("name") in self.nodes:
            name = meta["name"]
            now = bool((obj.get("spec") or {}).get("unschedulable"))
            before = self.unschedulable.get(name)
            if before is False and now:
                self.cordons[name] += 1
            if before and not now and name in self.protected:
                self.violations.append(f"{name}, cordoned by an administrator, was uncordoned")
            self.unschedulable[name] = now
            self._replay(rv, name, now)
        elif kind == "Pod" and self.workload_namespace and meta.get("namespace") == self.workload_namespace:
            gone = kind_of_event == "DELETED" or bool(meta.get("deletionTimestamp"))
            self.workload_ready[meta.get("uid", "")] = _ready(obj) and not gone
        elif kind == "Pod" and str(meta.get("name", "")).startswith(self.driver_prefix):
            node = (obj.get("spec") or {}).get("nodeName", "")
            if node not in self.nodes:
                return
            uid = meta.get("uid", "")
            pods = self.driver_ready.setdefault(node, {})
            if kind_of_event == "DELETED" or meta.get("deletionTimestamp"):
                self._replay(rv, node, (uid, None))
                if pods.pop(uid, None) is not None and self.armed:
                    self.replaced[node] += 1
                    if node in self.protected:
                        self.violations.append(
                            f"the driver pod of {node}, cordoned by an administrator, went"
                        )
            else:
                pods[uid] = ready = _ready(obj)
                self._replay(rv, node, (uid, ready))
        self._check_workload()

    def _replay(self, rv: int, node: str, change: bool | tuple[str, bool | None]) -> None:
        heapq.heappush(self._pending, (rv, next(self._arrival), node, change))

    def _release(self, *, until: float) -> None:
        """Apply the replay's changes up to resourceVersion ``until``, in order, checking
        the budget after each (see the module docstring)."""
        while self._pending and self._pending[0][0] <= until:
            rv, _, node, change = heapq.heappop(self._pending)
            if isinstance(change, bool):
                if self._cordoned_at.get(node, change) != change:
                    self._history.append((node, f"rv {rv}: {'cordoned' if change else 'uncordoned'}"))
                self._cordoned_at[node] = change
            else:
                uid, ready = change
                pods = self._ready_at.setdefault(node, {})
                if pods.get(uid) != ready:
                    what = "gone" if ready is None else "ready" if ready else "not ready"
                    self._history.append((node, f"rv {rv}: driver pod {uid[:8]} {what}"))
                if ready is None:
                    pods.pop(uid, None)
                else:
                    pods[uid] = ready
            self._check_budget(rv)

    def _check_budget(self, rv: int) -> None:
        if not self.armed or rv <= self._armed_at:  # the replay has not reached the armed picture
            return
        down = sorted(
            n for n in self.nodes if self._cordoned_at.get(n) or not any(self._ready_at.get(n, {}).values())
        )
        self.peak = max(self.peak, len(down))
        if len(down) > self.budget:
            said = f"{len(down)} nodes unavailable at resourceVersion {rv}: {down[:20]}"
            if not any(" nodes unavailable at " in v for v in self.violations):  # the first breach
                shown = set(down)
                lines = [f"{n} {what}" for n, what in self._history if n in shown]
                said += f" (their history: {'; '.join(lines[-40:])})"
            self.violations.append(said)

    def _check_workload(self) -> None:
        if not self.armed or not self.workload_namespace:
            return
        ready = sum(self.workload_ready.values())
        self.workload_low = ready if self.workload_low is None else min(self.workload_low, ready)
        if ready < self.workload_min:
            self.violations.append(f"the workload had {ready} Ready pods, fewer than {self.workload_min}")

    def arm(self) -> None:
        """Start checking (call once the cluster is settled and the picture complete)."""
        self.armed = True
        self._armed_at = max(self.seen_rv.get(NODES, 0), self.seen_rv.get(OPERANDS, 0))
        self._check_workload()
