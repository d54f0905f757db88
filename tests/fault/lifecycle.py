"""One SpecialResource's life, phase by phase, with a fault at a random point of each phase.

A round creates a SpecialResource (simple-kmod on the test's nodes, with a taint and a
PriorityClass so node taints, annotations and cluster-scoped objects are all in play),
waits until it is Ready on every node, moves half the nodes to a new kernel and waits
again, then deletes it and waits until nothing of it is left. Each phase starts its
action, sleeps a seeded random time (the sleep *is* the fault's timing, not a wait for
readiness), runs the fault, and then waits with a deadline for the phase's end; how long
that took after the fault is the convergence time the suite reports.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import specialresources as srs
from support import cluster as cluster_mod
from support import waiting

Fault = Callable[[], Awaitable[str]]
"""Injects one fault and returns what it did, in a few words."""

TAINT_KEY = "fault.sro.dev/accelerator"
PHASES = ("converge", "kernel", "teardown")
# Upper bounds of the random fault time after a phase's action, per phase (seconds).
WINDOWS = {"converge": 2.0, "kernel": 1.5, "teardown": 1.0}
WITHIN = 240.0  # a phase not done this long after its fault is a failure


@dataclasses.dataclass(frozen=True, kw_only=True)
class PhaseRecord:
    round: int
    phase: str
    fault: str
    started: float  # wall clock (time.time), for the audit's windows
    fault_done: float
    ended: float
    moved: tuple[str, ...] = ()
    during: bool = False  # the phase was not yet done when the fault struck

    @property
    def convergence(self) -> float:
        return self.ended - self.fault_done


def manifest(name: str, *, pool_selector: dict[str, str]) -> dict[str, Any]:
    return srs.manifest(
        name,
        recipe="simple-kmod",
        node_selector=pool_selector,
        extra_spec={
            "taints": [{"key": TAINT_KEY, "value": "present", "effect": "NoSchedule"}],
            "priorityClasses": [{"name": f"{name}-high", "value": 1000}],
        },
    )


def leftovers(cluster: cluster_mod.Cluster, *, name: str, nodes: Sequence[str]) -> list[str]:
    """Everything of SpecialResource ``name`` still in the cluster, in words; empty when clean."""
    found: list[str] = []
    if srs.get(cluster, name) is not None:
        found.append(f"specialresource/{name}")
    kinds = "namespaces,daemonsets,pods,serviceaccounts,configmaps,priorityclasses,roles,rolebindings"
    listed = cluster.kubectl_json("get", kinds, "-A", "-l", f"{srs.OWNER}={name}")
    found += [
        f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in listed["items"]
    ]
    if cluster.kubectl("get", "namespace", name, check=False).returncode == 0:
        found.append(f"namespace/{name}")
    for node in cluster.kubectl_json("get", "nodes")["items"]:
        if node["metadata"]["name"] not in nodes:
            continue
        meta = node["metadata"]
        found += [
            f"{meta['name']}: label {k}" for k in meta.get("labels") or {} if k.startswith(f"{name}.sro.dev/")
        ]
        found += [
            f"{meta['name']}: annotation {k}"
            for k in meta.get("annotations") or {}
            if k in (f"sro.dev/kernel.{name}", f"sro.dev/taints.{name}")
        ]
        found += [
            f"{meta['name']}: taint {t['key']}"
            for t in node["spec"].get("taints") or ()
            if t["key"] == TAINT_KEY
        ]
    return found


def duplicates(cluster: cluster_mod.Cluster, *, name: str) -> list[str]:
    """Two objects where there should be one: per kernel group, per node and state, per class."""
    found: list[str] = []
    by_kernel: dict[str, list[str]] = {}
    for ds in srs.owned(cluster, "daemonsets", name, namespace=name):
        if not ds["metadata"].get("deletionTimestamp"):
            kernel = ds["spec"]["template"]["spec"]["nodeSelector"].get(srs.KERNEL_LABEL, "")
            by_kernel.setdefault(kernel, []).append(ds["metadata"]["name"])
    found += [f"DaemonSets for kernel {k}: {v}" for k, v in by_kernel.items() if len(v) > 1]
    for node, states in srs.pods_by_node_and_state(cluster, name).items():
        for state, pods in states.items():
            live = [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]
            if len(live) > 1:
                found.append(f"{node} {state}: pods {live}")
    classes = srs.owned(cluster, "priorityclasses", name)
    if len(classes) != 1:
        found.append(f"priority classes: {[c['metadata']['name'] for c in classes]}")
    return found


def converged(cluster: cluster_mod.Cluster, *, name: str, nodes: Sequence[str], kernels: set[str]) -> bool:
    """Ready, every node complete and labelled, one DaemonSet per kernel the nodes run."""
    status = srs.status(cluster, name)
    if not srs.ready_condition(status) or status.get("nodes") != {
        "selected": len(nodes),
        "complete": len(nodes),
    }:
        return False
    sr = srs.get(cluster, name) or {}
    if (status.get("observedGeneration") or 0) < sr.get("metadata", {}).get("generation", 0):
        return False
    for node in cluster.kubectl_json("get", "nodes")["items"]:
        if (
            node["metadata"]["name"] in nodes
            and srs.sr_labels(node, name).get(f"{name}.sro.dev/complete") != "true"
        ):
            return False
    live = {
        ds["spec"]["template"]["spec"]["nodeSelector"].get(srs.KERNEL_LABEL, "")
        for ds in srs.owned(cluster, "daemonsets", name, namespace=name)
        if not ds["metadata"].get("deletionTimestamp")
    }
    return live == kernels


class Round:
    """One SpecialResource on the test's nodes, through the three phases."""

    def __init__(
        self,
        *,
        cluster: cluster_mod.Cluster,
        nodes: Sequence[str],
        kernels: dict[str, str],
        rng: random.Random,
        number: int,
        check: Callable[[], None] = lambda: None,
    ) -> None:
        self.cluster = cluster
        self.nodes = tuple(nodes)
        self.kernels = kernels  # node -> kernel it runs now (kept up to date across rounds)
        self.rng = rng
        self.number = number
        self.check = check  # called while waiting: restarts dead replicas, fails on a crash
        self.name = f"fault-{uuid.uuid4().hex[:6]}"
        self.records: list[PhaseRecord] = []

    def converged(self) -> bool:
        return converged(self.cluster, name=self.name, nodes=self.nodes, kernels=set(self.kernels.values()))

    async def _phase(
        self,
        phase: str,
        *,
        action: Callable[[], tuple[str, ...]],
        fault: Fault | None,
        done: Callable[[], bool],
    ) -> PhaseRecord:
        started = time.time()
        moved = action()
        what, during = "none", False
        if fault is not None:
            await asyncio.sleep(
                self.rng.uniform(0.0, WINDOWS[phase])
            )  # the fault's random point in the phase
            during = not done()
            what = await fault()
        fault_done = time.time()

        def finished() -> bool:
            self.check()
            return done()

        await waiting.wait_for(
            finished, timeout=WITHIN, interval=0.5, message=f"round {self.number} {phase} after fault {what}"
        )
        record = PhaseRecord(
            round=self.number, phase=phase, fault=what, started=started, fault_done=fault_done,
            ended=time.time(), moved=moved, during=during,
        )  # fmt: skip
        self.records.append(record)
        return record

    async def converge(self, *, selector: dict[str, str], fault: Fault | None) -> PhaseRecord:
        def create() -> tuple[str, ...]:
            srs.create(self.cluster, manifest(self.name, pool_selector=selector))
            return ()

        return await self._phase("converge", action=create, fault=fault, done=self.converged)

    async def kernel_change(self, *, fault: Fault | None) -> PhaseRecord:
        """Moves the nodes of the first kernel group to a kernel no node ran before."""
        first = sorted(set(self.kernels.values()))[0]
        moved = tuple(sorted(n for n, k in self.kernels.items() if k == first))
        new = f"5.14.0-{500 + self.number}.{self.rng.randint(1, 999)}.1.el9_4.x86_64"

        def move() -> tuple[str, ...]:
            self.cluster.set_kernel(moved, new)
            for node in moved:
                self.kernels[node] = new
            return moved

        return await self._phase("kernel", action=move, fault=fault, done=self.converged)

    async def teardown(self, *, fault: Fault | None) -> PhaseRecord:
        def delete() -> tuple[str, ...]:
            srs.delete(self.cluster, self.name)
            return ()

        return await self._phase(
            "teardown",
            action=delete,
            fault=fault,
            done=lambda: not leftovers(self.cluster, name=self.name, nodes=self.nodes),
        )
