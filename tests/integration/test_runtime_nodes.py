"""Node events through a running manager: bursts collapse, heartbeats cost nothing.

Covers: 10,000 label changes on 100 nodes lead to far fewer reconciles than events,
and no key is ever reconciled by two workers at once (asserted inside the
reconcile). The first pass of each key is held until the burst has been sent, the
way a slow reconcile would be: the count then does not depend on how fast this
shared machine happens to be (free-running figures come from ``hack/bench runtime``).
Node heartbeats (status condition timestamps) enqueue nothing and write
nothing, while a label change on the same nodes does reconcile. A calm Node watch reads
a trickle of such events in batches, loses none, and stops resting that long after a
change that queued work; a busy one (its events queueing work) reads what comes within
its short rest together (``busy_rest``), and loses none either. Counts
are printed.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Callable
from typing import Any

import pytest
from support import waiting

from sro import settings
from sro.kube import http
from sro.runtime import result
from sro.runtime.manager import Manager

pytestmark = pytest.mark.integration

POOL_LABEL = "sim.sro.dev/pool"


def manager_for(
    cluster: Any, pool: str, keys: set[str], *, watch: settings.WatchSettings | None = None
) -> Manager:
    m = Manager(
        settings.Settings(
            api=settings.ApiSettings(kubeconfig=str(cluster.kubeconfig)),
            server=settings.ServerSettings(port=0),
            lease=settings.LeaseSettings(enabled=False),
            controller=settings.ControllerSettings(workers=4, reconcile_timeout=3600),
            watch=watch or settings.WatchSettings(),
        )
    )

    def node_keys(old: Any, new: Any) -> set[str]:
        ours = any(n is not None and n.labels.get(POOL_LABEL) == pool for n in (old, new))
        return set(keys) if ours else set()

    m.watch_nodes(node_keys)
    return m


class Counting:
    """A reconcile that counts passes and fails the test if a key is ever run twice at once.

    Each pass takes ``cost`` seconds, standing in for the reconcile's own API round trips
    (an apply and a status write are tens of milliseconds each): how many passes a burst
    costs is about keys x burst duration / cost, whatever the number of events.
    """

    def __init__(self, cost: float = 0.1) -> None:
        self.cost = cost
        self.hold = asyncio.Event()
        self.hold.set()
        self.running: set[str] = set()
        self.passes = 0
        self.overlaps = 0

    async def __call__(self, key: str) -> result.Result:
        if key in self.running:
            self.overlaps += 1
        self.running.add(key)
        try:
            await self.hold.wait()
            await asyncio.sleep(self.cost)
            self.passes += 1
            return result.DONE
        finally:
            self.running.discard(key)


async def settle(m: Manager) -> None:
    await waiting.wait_for(lambda: m.has_synced and m.role == "leader", timeout=60, message="manager working")
    await waiting.wait_for(
        lambda: len(m.queue) == 0 and not m.queue.processing and m.queue.waiting == 0,
        timeout=60,
        message="queue idle",
    )


def writes(m: Manager) -> float:
    return sum(m.metrics.total("sro_api_requests_total", verb=v) for v in ("patch", "post", "put", "delete"))


@pytest.mark.timeout(1800)
async def test_ten_thousand_label_changes_lead_to_far_fewer_reconciles(
    cluster: Any, node_pool: Callable[..., Any]
) -> None:
    pool = node_pool(count=100)
    m = manager_for(cluster, pool.name, {"sr-a", "sr-b", "sr-c"})
    reconcile = Counting()
    m.reconcile_with(reconcile)
    running = asyncio.create_task(m.run())
    try:
        await settle(m)
        before_events = m.metrics.value("sro_watch_events_total", {"resource": "nodes"})
        before_passes = reconcile.passes
        reconcile.hold.clear()
        m.queue.add("sr-a")  # one pass starts and is held while the burst arrives
        await waiting.wait_for(lambda: "sr-a" in reconcile.running, timeout=30, message="a pass in flight")
        async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
            gate = asyncio.Semaphore(64)

            async def change(i: int) -> None:
                node = pool.nodes[i % len(pool.nodes)]
                async with gate:
                    await api.request(
                        "PATCH",
                        f"/api/v1/nodes/{node}",
                        body={"metadata": {"labels": {"bench.sro.dev/v": str(i // len(pool.nodes))}}},
                        content_type=http.MERGE_PATCH,
                    )

            started = time.monotonic()
            await asyncio.gather(*(change(i) for i in range(10_000)))
            took = time.monotonic() - started
        print(
            f"\nburst sent in {took:.1f} s; node watch so far: "
            f"{m.metrics.value('sro_watch_events_total', {'resource': 'nodes'}) - before_events:.0f} events, "
            f"{m.metrics.value('sro_watch_rests_total', {'resource': 'nodes'}):.0f} rests"
        )
        reconcile.hold.set()
        last = str(9_999 // len(pool.nodes))
        await waiting.wait_for(
            lambda: all(m.nodes.get(n).labels.get("bench.sro.dev/v") == last for n in pool.nodes),
            timeout=120,
            message="every change seen by the cache",
        )
        await settle(m)
        events = m.metrics.value("sro_watch_events_total", {"resource": "nodes"}) - before_events
        passes = reconcile.passes - before_passes
        print(
            f"\n10,000 label changes in {took:.1f} s: "
            f"{events:.0f} node events -> {passes} reconciles (3 keys), "
            f"{m.metrics.value('sro_watch_rests_total', {'resource': 'nodes'}):.0f} rests of the node watch"
        )
        assert reconcile.overlaps == 0, "a key was reconciled by two workers at once"
        assert events >= 10_000
        assert 3 <= passes <= events / 100
    finally:
        m.stop()
        assert await asyncio.wait_for(running, 60) == 0


async def test_heartbeats_cause_no_reconcile_and_no_write(
    cluster: Any, node_pool: Callable[..., Any]
) -> None:
    pool = node_pool(count=5)
    m = manager_for(cluster, pool.name, {"sr"})
    reconcile = Counting()
    m.reconcile_with(reconcile)
    running = asyncio.create_task(m.run())
    try:
        await settle(m)
        events0 = m.metrics.value("sro_watch_events_total", {"resource": "nodes"})
        passes0, writes0 = reconcile.passes, writes(m)
        adds0 = m.metrics.value("sro_workqueue_adds_total")
        async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
            start = datetime.datetime.now(datetime.UTC)
            for i in range(20):
                # Heartbeat timestamps have one-second resolution: each beat gets its own second.
                now = (start + datetime.timedelta(seconds=i + 1)).strftime("%Y-%m-%dT%H:%M:%SZ")
                beat = {"status": {"conditions": [{"type": "Ready", "lastHeartbeatTime": now}]}}
                await asyncio.gather(
                    *(
                        api.request(
                            "PATCH",
                            f"/api/v1/nodes/{n}/status",
                            body=beat,
                            content_type="application/strategic-merge-patch+json",
                        )
                        for n in pool.nodes
                    )
                )
        await waiting.wait_for(
            lambda: m.metrics.value("sro_watch_events_total", {"resource": "nodes"}) - events0 >= 100,
            timeout=60,
            message="heartbeats seen by the reflector",
        )
        await settle(m)
        events = m.metrics.value("sro_watch_events_total", {"resource": "nodes"}) - events0
        print(
            f"\nheartbeats: {events:.0f} node events -> {reconcile.passes - passes0} reconciles, "
            f"{writes(m) - writes0:.0f} writes"
        )
        assert reconcile.passes == passes0
        assert writes(m) == writes0
        assert m.metrics.value("sro_workqueue_adds_total") == adds0, "a heartbeat enqueued a key"
        wakes0 = m.metrics.value("sro_watch_wakes_total", {"resource": "nodes"})
        # The same nodes changing something a reconcile reads does enqueue, and the node
        # stream is counted as what woke it.
        cluster.kubectl("label", "node", pool.nodes[0], "bench.sro.dev/x=1")
        await waiting.wait_for(
            lambda: reconcile.passes > passes0, timeout=30, message="a relevant change reconciles"
        )
        assert m.metrics.value("sro_watch_wakes_total", {"resource": "nodes"}) > wakes0
    finally:
        m.stop()
        assert await asyncio.wait_for(running, 60) == 0


async def test_a_calm_node_watch_reads_in_batches_and_reads_at_once_after_a_change(
    cluster: Any, node_pool: Callable[..., Any]
) -> None:
    pool = node_pool(count=3)
    # Calm after 3 s without a queued key; then a rest of 0.5 s between reads.
    m = manager_for(cluster, pool.name, {"sr"}, watch=settings.WatchSettings(calm_rest=0.5, calm_after=3.0))
    reconcile = Counting(cost=0.0)
    m.reconcile_with(reconcile)
    running = asyncio.create_task(m.run())

    def events() -> float:
        return m.metrics.value("sro_watch_events_total", {"resource": "nodes"})

    def rests() -> float:
        return m.metrics.value("sro_watch_rests_total", {"resource": "nodes"})

    def reads() -> float:
        return m.metrics.value("sro_watch_reads_total", {"resource": "nodes"})

    try:
        await settle(m)
        async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:

            async def beats(count: int, tag: str) -> str:
                """``count`` changes nothing reads (an annotation), one after another; the
                last one's resourceVersion."""
                version = ""
                for i in range(count):
                    node = pool.nodes[i % len(pool.nodes)]
                    answer = await api.request(
                        "PATCH",
                        f"/api/v1/nodes/{node}",
                        body={"metadata": {"annotations": {"bench.sro.dev/beat": f"{tag}-{i}"}}},
                        content_type=http.MERGE_PATCH,
                    )
                    version = answer["metadata"]["resourceVersion"]
                return version

            # Calm once no key was queued for 3 s: beat until the watch rests.
            deadline = time.monotonic() + 60
            while rests() == 0:
                assert time.monotonic() < deadline, "the node watch never grew calm"
                seen = events()
                await beats(1, f"warm{seen:.0f}")
                await waiting.wait_for(lambda s=seen: events() > s, timeout=30, message="a beat read")
            events0, rests0, reads0 = events(), rests(), reads()
            last = await beats(60, "calm")
            await waiting.wait_for(lambda: events() - events0 >= 60, timeout=60, message="every beat read")
            store = m.nodes
            assert any(n.resource_version == last for n in store.values()), "the last beat is cached"
            calm_rests = rests() - rests0
            print(f"\ncalm: 60 node events read after {calm_rests:.0f} rests")
            assert 1 <= calm_rests <= 30, "a calm watch rests, and reads several events after each rest"
            calm_reads = reads() - reads0
            # Each rest follows a read; a read may have none (an event that queued work, a
            # large read), so only the one bound holds exactly.
            assert calm_rests <= calm_reads, "a rest without a read"
            assert (events() - events0) / calm_reads >= 2, "a read after a rest carries what came meanwhile"

            # A change that queues work ends the calm: the next events are read without a
            # calm rest (at most a busy one, uncounted).
            passes0 = reconcile.passes
            cluster.kubectl("label", "node", pool.nodes[0], "bench.sro.dev/x=1")
            await waiting.wait_for(
                lambda: reconcile.passes > passes0, timeout=30, message="the change reconciles"
            )
            events1, rests1 = events(), rests()
            await beats(6, "stirred")
            await waiting.wait_for(
                lambda: events() - events1 >= 6, timeout=30, message="beats after the change"
            )
            assert rests() == rests1, "a watch whose events just queued work rested"
    finally:
        m.stop()
        assert await asyncio.wait_for(running, 60) == 0


async def test_a_busy_node_watch_reads_what_comes_within_its_rest_together(
    cluster: Any, node_pool: Callable[..., Any]
) -> None:
    pool = node_pool(count=3)
    # Never calm (no calm rest at all), a busy rest of 0.3 s: every label change queues work.
    watch = settings.WatchSettings(calm_rest=0.0, busy_rest=0.3, calm_after=3600.0)
    m = manager_for(cluster, pool.name, {"sr"}, watch=watch)
    reconcile = Counting(cost=0.0)
    m.reconcile_with(reconcile)
    running = asyncio.create_task(m.run())

    def value(name: str) -> float:
        return m.metrics.value(name, {"resource": "nodes"})

    try:
        await settle(m)
        async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
            events0, reads0, passes0 = (
                value("sro_watch_events_total"),
                value("sro_watch_reads_total"),
                reconcile.passes,
            )
            last = ""
            for i in range(60):  # one after another, each answered before the next is sent
                answer = await api.request(
                    "PATCH",
                    f"/api/v1/nodes/{pool.nodes[i % len(pool.nodes)]}",
                    body={"metadata": {"labels": {"bench.sro.dev/busy": str(i)}}},
                    content_type=http.MERGE_PATCH,
                )
                last = answer["metadata"]["resourceVersion"]
            await waiting.wait_for(
                lambda: value("sro_watch_events_total") - events0 >= 60,
                timeout=60,
                message="every change read",
            )
            assert any(n.resource_version == last for n in m.nodes.values()), "the last change is cached"
            await waiting.wait_for(
                lambda: reconcile.passes > passes0, timeout=30, message="the changes reconcile"
            )
            events, reads = value("sro_watch_events_total") - events0, value("sro_watch_reads_total") - reads0
            print(f"\nbusy: {events:.0f} node events in {reads:.0f} reads")
            assert events / reads >= 2, "a read after a busy rest carries what came meanwhile"
            assert value("sro_watch_rests_total") == 0, "a busy rest counted as a calm one"
    finally:
        m.stop()
        assert await asyncio.wait_for(running, 60) == 0
