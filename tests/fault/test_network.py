"""Network faults on real TCP between sro and kube-apiserver, through ``hack/lib/faultproxy.py``.

Two replicas reach the API server only through the fault proxy, which keeps each one's
client identity upstream (the audit still tells them apart) and, all along, adds latency,
resets 3% of requests, spread evenly (half of those that are not watches after the API
server has carried them out, so the answer is lost and the client cannot know) and
delays every watch of pods by seconds (the pod cache lags the others: caches disagree).
On top, at a random point of each phase: every watch stalls and every connection is
reset (converge); the leader's connections go half-open, open and silent (kernel change);
every connection is reset (teardown).

The second test lists a kind that needs two pages while etcd is compacted between them:
the continue token expires, and the replica must list again from scratch, not give up.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter

import pytest
from conftest import REPORT, Rig, rounds
from support import waiting

ROUNDS = rounds(short=1, long=5)
STALL = 6.0  # seconds every watch stream is stalled (the fault's length)
pytestmark = [pytest.mark.fault, pytest.mark.timeout(300 + 300 * ROUNDS)]


async def test_latency_resets_stalls_lagging_watches_and_half_open_connections_lose_nothing(rig: Rig) -> None:
    fleet = rig.start_fleet(replicas=2, through_proxy=True)
    proxy = rig.proxy
    assert proxy is not None
    proxy.set_faults(latency=0.02, reset_rate=0.03, delay_watch={"pods": 3.0})
    await fleet.wait_leader()
    counts: Counter[str] = Counter()

    async def stall_and_reset() -> str:
        stalled = proxy.stall_watches(seconds=STALL)
        await asyncio.sleep(STALL)  # the stall itself
        reset = proxy.reset_all()
        counts["watch stall"] += 1
        counts["reset of every connection"] += 1
        return f"{stalled} watches stalled {STALL:.0f}s, then {reset} connections reset"

    async def half_open() -> str:
        leader = await fleet.wait_leader()
        n = proxy.half_open(user=leader.user)
        counts["half-open (leader's connections)"] += 1
        return f"{n} connections of {leader.user} half-open"

    async def reset() -> str:
        counts["reset of every connection"] += 1
        return f"{proxy.reset_all()} connections reset"

    for _ in range(ROUNDS):
        await rig.play_round(converge=stall_and_reset, kernel=half_open, teardown=reset)
    stats = proxy.stats()
    lost = sum(1 for e in fleet.exits if e.lost_lease and not e.asked)
    rig.judge(
        fleet,
        test="network faults",
        faults=dict(counts),
        extra=(
            f"proxy: {stats.get('requests', 0)} requests, {stats.get('reset_before', 0)} reset before "
            f"and {stats.get('reset_after', 0)} after being served, "
            f"{stats.get('watch_delayed.pods', 0)} pod watches delayed 3s; "
            f"{lost} leaders gave up the Lease"
        ),
    )
    assert stats.get("reset_after", 0) >= 1 and stats.get("reset_before", 0) >= 1, stats
    assert stats.get("watch_delayed.pods", 0) >= 1 and stats.get("stalled_watches", 0) >= 1, stats
    assert stats.get("half_open", 0) >= 1, stats


PAGE = 500  # sro's list page size (settings.WatchSettings.page_size)


async def test_a_continue_token_expired_by_compaction_relists_from_scratch(rig: Rig) -> None:
    namespace = f"fault-cm-{uuid.uuid4().hex[:6]}"
    cluster = rig.cluster
    cluster.kubectl("create", "namespace", namespace)
    try:
        items = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"cm-{i}",
                    "namespace": namespace,
                    "labels": {"sro.dev/owner": "nobody"},
                },
            }
            for i in range(PAGE + 20)
        ]
        cluster.kubectl(
            "create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
        )
        fleet = rig.start_fleet(replicas=0, through_proxy=True)
        proxy = rig.proxy
        assert proxy is not None
        proxy.set_faults(hold_continue=True)
        sro = fleet.spawn()
        await waiting.wait_for(
            lambda: proxy.stats().get("continue_held", 0) >= 1,
            timeout=60,
            message="a second page asked and held",
        )
        # A write moves the revision past the first page's; compacting there expires the token
        # (and kube-apiserver restarts, emptying its watch cache).
        cluster.kubectl("create", "configmap", "after-the-first-page", "-n", namespace)
        revision = cluster.compact()
        proxy.set_faults()
        proxy.release()
        await waiting.wait_for(sro.ready, timeout=90, message="the replica's caches synced")
        assert proxy.stats().get("reconnected_after_hold", 0) >= 1, "the held page went to the new server"
        lines = [json.loads(line) for line in sro.log_text().splitlines() if line.startswith("{")]
        mine = [
            e for e in lines if e.get("resource") == "configmaps" and e.get("selector") == "sro.dev/owner"
        ]
        listed = [e for e in mine if e.get("event") == "listed"]
        assert mine and "expired" in mine[0].get("event", ""), (
            f"the second page was refused as expired: {mine}"
        )
        assert listed and listed[0]["objects"] == PAGE + 20 and listed[0]["reason"] != "initial", listed
        REPORT.append(
            f"expired continue token: etcd compacted at {revision} between two pages; the replica "
            f"listed again from scratch ({listed[0]['objects']} ConfigMaps, reason {listed[0]['reason']})"
        )
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
