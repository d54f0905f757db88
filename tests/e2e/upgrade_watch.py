"""An independent invariant watcher for driver upgrades: its own processes, its own view.

It runs two ``kubectl get --watch`` processes (Nodes, and the Pods of the operand
namespace) on their own connections, folds every event into its own picture, and after
each event checks what must hold at every moment of a rollout:

* at most ``budget`` of the watched nodes are unavailable (unschedulable, or without a
  Ready driver pod, judged once the Pod stream has caught up with the Node stream);
* no node the watcher saw cordoned by someone else first is uncordoned or loses a pod;
* a workload (the pods of ``workload_namespace``) never has fewer than ``workload_min``
  Ready pods: its PodDisruptionBudget held.

It also counts, per node, the driver pods that went away (each node's driver must be
replaced exactly once) and the times each node was cordoned. Nothing here uses sro's
code: what it records is what the API server told a client, not what sro believes.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from support import cluster as cluster_mod


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
    seen_rv: dict[str, int] = field(default_factory=dict)  # "Node"/"Pod" -> newest resourceVersion seen

    async def start(self) -> None:
        watches = [["nodes"], ["pods", "-n", self.namespace]]
        if self.workload_namespace:
            watches.append(["pods", "-n", self.workload_namespace])
        for args in watches:
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
            self._tasks.append(asyncio.create_task(self._read(proc)))

    async def stop(self) -> None:
        for proc in self._procs:
            if proc.returncode is None:
                proc.terminate()
                await proc.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
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
                self._fold(event)
            buffer = buffer[at:]

    def _fold(self, event: Mapping[str, Any]) -> None:
        obj = event.get("object") or {}
        if str(obj.get("kind", "")).endswith("List"):  # kubectl prints a chunked first list as Lists
            for item in obj.get("items") or ():
                self._fold({"type": event.get("type"), "object": item})
            return
        kind, kind_of_event = obj.get("kind"), event.get("type")
        meta = obj.get("metadata") or {}
        self.events += 1
        rv = str(meta.get("resourceVersion", ""))
        if kind in ("Node", "Pod") and rv.isdigit():
            self.seen_rv[kind] = max(self.seen_rv.get(kind, 0), int(rv))
        if kind == "Node" and meta.get("name") in self.nodes:
            name = meta["name"]
            now = bool((obj.get("spec") or {}).get("unschedulable"))
            before = self.unschedulable.get(name)
            if before is False and now:
                self.cordons[name] += 1
            if before and not now and name in self.protected:
                self.violations.append(f"{name}, cordoned by an administrator, was uncordoned")
            self.unschedulable[name] = now
        elif kind == "Pod" and self.workload_namespace and meta.get("namespace") == self.workload_namespace:
            conditions = (obj.get("status") or {}).get("conditions") or ()
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
            gone = kind_of_event == "DELETED" or bool(meta.get("deletionTimestamp"))
            self.workload_ready[meta.get("uid", "")] = ready and not gone
        elif kind == "Pod" and str(meta.get("name", "")).startswith(self.driver_prefix):
            node = (obj.get("spec") or {}).get("nodeName", "")
            if node not in self.nodes:
                return
            uid = meta.get("uid", "")
            pods = self.driver_ready.setdefault(node, {})
            if kind_of_event == "DELETED" or meta.get("deletionTimestamp"):
                if pods.pop(uid, None) is not None and self.armed:
                    self.replaced[node] += 1
                    if node in self.protected:
                        self.violations.append(
                            f"the driver pod of {node}, cordoned by an administrator, went"
                        )
            else:
                conditions = (obj.get("status") or {}).get("conditions") or ()
                pods[uid] = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        self._check()

    def _check(self) -> None:
        if not self.armed:
            return
        # Two streams: a node's cordon and its driver pod's readiness are compared only once
        # the Pod stream has caught up with the Node stream (resourceVersions are one etcd
        # sequence), so a lagging stream never shows a moment that did not happen; cordons
        # alone come from one stream and are checked on every event.
        consistent = self.seen_rv.get("Pod", 0) >= self.seen_rv.get("Node", 0)
        down = sorted(
            n
            for n in self.nodes
            if self.unschedulable.get(n) or (consistent and not any(self.driver_ready.get(n, {}).values()))
        )
        self.peak = max(self.peak, len(down))
        if self.workload_namespace:
            ready = sum(self.workload_ready.values())
            self.workload_low = ready if self.workload_low is None else min(self.workload_low, ready)
            if ready < self.workload_min:
                self.violations.append(f"the workload had {ready} Ready pods, fewer than {self.workload_min}")
        if len(down) > self.budget:
            self.violations.append(f"{len(down)} nodes unavailable at {time.monotonic():.1f}: {down[:20]}")

    def arm(self) -> None:
        """Start checking (call once the cluster is settled and the picture complete)."""
        self.armed = True
        self._check()
