#!/usr/bin/env python3
"""Figures of the controller runtime against a real local cluster; prints, asserts nothing.

    runtime_bench.py pipeline  [--copies 5000]                 events/s and cache memory
    runtime_bench.py heartbeat [--nodes 1000] [--minutes 10] [--period 60]
    runtime_bench.py burst     [--nodes 100] [--changes 10000] [--cost 0.1]

``pipeline`` lists the cluster's nodes through a real reflector (objects/s), then
replays them as MODIFIED watch lines through parse -> store -> node handler -> queue
(events/s, the CPU ceiling of one reflector), and measures resident memory of node
caches of 1,000 and 5,000 entries made from the cluster's node bodies. ``heartbeat``
adds nodes, runs a manager whose mapper selects them, sends status heartbeats (as a
kubelet does, every ``--period`` s per node, on top of kwok's Lease renewals) and
prints events, reconciles and writes. ``burst`` sends label changes as fast as the
server takes them with a free-running reconcile of ``--cost`` seconds.
The cluster is the one ``SRO_CLUSTER_DIR`` names (default .run/cluster).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import itertools
import json
import os
import subprocess
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

from sro import settings
from sro.cache import projections, store
from sro.kube import discovery, http
from sro.observe import logs, metrics
from sro.queue import workqueue
from sro.runtime import handlers, result
from sro.runtime.manager import Manager
from sro.watch import events, reflector

REPO = Path(__file__).resolve().parents[2]
CLUSTER_DIR = Path(os.environ.get("SRO_CLUSTER_DIR") or REPO / ".run" / "cluster")
KUBECONFIG = str(CLUSTER_DIR / "kubeconfig")
POOL_LABEL = "sim.sro.dev/pool"


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def api_settings() -> settings.ApiSettings:
    return settings.ApiSettings(kubeconfig=KUBECONFIG)


def cluster_cli(*args: str) -> str:
    env = {**os.environ, "SRO_CLUSTER_DIR": str(CLUSTER_DIR)}
    out = subprocess.run(
        [str(REPO / "hack" / "cluster"), *args], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout


async def pipeline(args: argparse.Namespace) -> None:
    m = metrics.Metrics()
    async with await http.Api.connect(api_settings(), metrics=m) as api:
        resource = await discovery.Discovery(api).resource("v1", "Node")
        q: workqueue.WorkQueue[str] = workqueue.WorkQueue()
        s: store.Store[Any] = store.Store(resource="nodes", project=projections.node)
        r = reflector.Reflector(
            api=api,
            resource=resource,
            store=s,
            on_change=handlers.nodes(q.add, lambda old, new: {"sr"}),
            settings=settings.WatchSettings(),
            metrics=m,
        )
        started = time.monotonic()
        task = asyncio.create_task(r.run())
        await r.synced.wait()
        took = time.monotonic() - started
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        print(f"relist: {len(s)} nodes in {took:.2f} s ({len(s) / took:,.0f} objects/s, HTTP included)")
        bodies = (await api.request("GET", "/api/v1/nodes", params={"limit": "500"}))["items"]
    if not bodies:
        print("no nodes in the cluster: add some (hack/cluster nodes --count 1000)")
        return

    def fill(count: int) -> store.Store[Any]:
        cache: store.Store[Any] = store.Store(resource="nodes", project=projections.node)
        for i in range(count):
            body = json.loads(json.dumps(bodies[i % len(bodies)]))
            body["metadata"]["name"] = f"mem-{i}"
            body["metadata"].setdefault("labels", {})["bench.sro.dev/i"] = str(i)
            cache.upsert(body)
        return cache

    for count in (1_000, 5_000):
        gc.collect()
        base = rss_mib()
        cache = fill(count)
        gc.collect()
        grown = rss_mib() - base
        del cache
        gc.collect()
        tracemalloc.start()
        cache = fill(count)
        gc.collect()
        current, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del cache
        print(
            f"memory: {count:,} cached nodes: {current / 2**20:.1f} MiB held by the cache "
            f"({current / count / 1024:.1f} KiB/node, tracemalloc); process RSS {rss_mib():.0f} MiB, "
            f"grew {grown:.1f} MiB while filling"
        )

    # Replay: every line is a relevant change (a label flips), so each reaches the queue.
    lines = []
    for i in range(args.events):
        body = json.loads(json.dumps(bodies[i % len(bodies)]))
        body["metadata"]["resourceVersion"] = str(10_000_000 + i)
        body["metadata"].setdefault("labels", {})["bench.sro.dev/i"] = str(i)
        lines.append(json.dumps({"type": "MODIFIED", "object": body}).encode())
    s2: store.Store[Any] = store.Store(resource="nodes", project=projections.node)
    q2: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    handle = handlers.nodes(q2.add, lambda old, new: {new.name if new else old.name})
    started = time.monotonic()
    for line in lines:
        event = events.parse(line)
        assert event is not None
        change = s2.upsert(event.object)
        if change is not None:
            handle(change)
    took = time.monotonic() - started
    print(
        f"pipeline: {len(lines):,} watch lines parse -> store -> handler -> queue in {took:.2f} s "
        f"({len(lines) / took:,.0f} events/s); queue holds {len(q2)} keys"
    )


class Counting:
    def __init__(self, cost: float) -> None:
        self.cost = cost
        self.passes = 0
        self.running: set[str] = set()
        self.overlaps = 0

    async def __call__(self, key: str) -> result.Result:
        if key in self.running:
            self.overlaps += 1
        self.running.add(key)
        try:
            await asyncio.sleep(self.cost)
            self.passes += 1
            return result.DONE
        finally:
            self.running.discard(key)


def manager(pool: str, keys: set[str], reconcile: Counting) -> Manager:
    m = Manager(
        settings.Settings(
            api=api_settings(),
            server=settings.ServerSettings(port=0),
            lease=settings.LeaseSettings(enabled=False),
        )
    )
    m.watch_nodes(
        lambda old, new: (
            set(keys)
            if any(n is not None and n.labels.get(POOL_LABEL) == pool for n in (old, new))
            else set()
        )
    )
    m.reconcile_with(reconcile)
    return m


async def until(predicate: Any, interval: float = 0.2) -> None:
    """Poll a condition (a benchmark has no deadline to report against)."""
    for _ in itertools.count():
        if predicate():
            return
        await asyncio.sleep(interval)


def writes(m: Manager) -> float:
    return sum(m.metrics.total("sro_api_requests_total", verb=v) for v in ("patch", "post", "put", "delete"))


async def add_pool(count: int, prefix: str) -> tuple[str, list[str]]:
    pool = f"{prefix}-{uuid.uuid4().hex[:6]}"
    started = time.monotonic()
    out = await asyncio.to_thread(
        cluster_cli, "nodes", "--count", str(count), "--prefix", pool, "--pool", pool
    )
    names = [n for n in out.split() if n.startswith(pool)]
    print(f"added {len(names)} nodes (pool {pool}) in {time.monotonic() - started:.0f} s")
    return pool, names


async def heartbeat(args: argparse.Namespace) -> None:
    pool, names = await add_pool(args.nodes, "hb")
    reconcile = Counting(0.05)
    m = manager(pool, {"sr"}, reconcile)
    running = asyncio.create_task(m.run())
    try:
        await until(lambda: m.has_synced and m.role == "leader")
        await until(lambda: not len(m.queue) and not m.queue.processing)
        passes0, writes0 = reconcile.passes, writes(m)
        events0 = m.metrics.value("sro_watch_events_total", {"resource": "nodes"})
        async with await http.Api.connect(api_settings()) as api:
            gate = asyncio.Semaphore(16)
            sent = 0

            async def beat(node: str, at: datetime.datetime) -> None:
                nonlocal sent
                stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
                body = {"status": {"conditions": [{"type": "Ready", "lastHeartbeatTime": stamp}]}}
                async with gate:
                    await api.request(
                        "PATCH",
                        f"/api/v1/nodes/{node}/status",
                        body=body,
                        content_type="application/strategic-merge-patch+json",
                    )
                sent += 1

            end = time.monotonic() + args.minutes * 60
            minute = time.monotonic() + 60
            spacing = args.period / len(names)
            i = 0
            while time.monotonic() < end:
                await beat(names[i % len(names)], datetime.datetime.now(datetime.UTC))
                i += 1
                await asyncio.sleep(spacing)  # pacing the load generator, not waiting for state
                if time.monotonic() >= minute:
                    minute += 60
                    ev = m.metrics.value("sro_watch_events_total", {"resource": "nodes"}) - events0
                    print(
                        f"  {sent} heartbeats sent, {ev:.0f} node events, "
                        f"{reconcile.passes - passes0} reconciles, {writes(m) - writes0:.0f} writes",
                        flush=True,
                    )
        ev = m.metrics.value("sro_watch_events_total", {"resource": "nodes"}) - events0
        print(
            f"heartbeat: {len(names)} nodes for {args.minutes} min: {sent} heartbeats sent, "
            f"{ev:.0f} node events, {reconcile.passes - passes0} reconciles, "
            f"{writes(m) - writes0:.0f} writes, "
            f"queue adds {m.metrics.value('sro_workqueue_adds_total'):.0f}, RSS {rss_mib():.0f} MiB"
        )
    finally:
        m.stop()
        await running
        await asyncio.to_thread(cluster_cli, "nodes", "--delete", *names)


async def burst(args: argparse.Namespace) -> None:
    pool, names = await add_pool(args.nodes, "burst")
    reconcile = Counting(args.cost)
    m = manager(pool, {"sr-a", "sr-b", "sr-c"}, reconcile)
    running = asyncio.create_task(m.run())
    try:
        await until(lambda: m.has_synced and m.role == "leader")
        passes0 = reconcile.passes
        events0 = m.metrics.value("sro_watch_events_total", {"resource": "nodes"})
        async with await http.Api.connect(api_settings()) as api:
            gate = asyncio.Semaphore(64)

            async def change(i: int) -> None:
                async with gate:
                    await api.request(
                        "PATCH",
                        f"/api/v1/nodes/{names[i % len(names)]}",
                        body={"metadata": {"labels": {"bench.sro.dev/v": str(i // len(names))}}},
                        content_type=http.MERGE_PATCH,
                    )

            started = time.monotonic()
            await asyncio.gather(*(change(i) for i in range(args.changes)))
            took = time.monotonic() - started
        await until(lambda: not len(m.queue) and not m.queue.processing)
        ev = m.metrics.value("sro_watch_events_total", {"resource": "nodes"}) - events0
        print(
            f"burst: {args.changes:,} label changes on {len(names)} nodes in {took:.1f} s "
            f"({args.changes / took:,.0f}/s accepted by the server): {ev:,.0f} node events -> "
            f"{reconcile.passes - passes0} reconciles of 3 keys at {args.cost} s each; "
            f"concurrent passes of one key: {reconcile.overlaps}"
        )
    finally:
        m.stop()
        await running
        await asyncio.to_thread(cluster_cli, "nodes", "--delete", *names)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode")
    pp = sub.add_parser("pipeline")
    pp.add_argument("--events", type=int, default=50_000)
    hb = sub.add_parser("heartbeat")
    hb.add_argument("--nodes", type=int, default=1000)
    hb.add_argument("--minutes", type=float, default=10)
    hb.add_argument("--period", type=float, default=60)
    bu = sub.add_parser("burst")
    bu.add_argument("--nodes", type=int, default=100)
    bu.add_argument("--changes", type=int, default=10_000)
    bu.add_argument("--cost", type=float, default=0.1)
    args = p.parse_args()
    logs.configure(format="console", level="warning")
    mode = args.mode or "pipeline"
    if mode == "pipeline" and not hasattr(args, "events"):
        args.events = 50_000
    asyncio.run({"pipeline": pipeline, "heartbeat": heartbeat, "burst": burst}[mode](args))


if __name__ == "__main__":
    main()
