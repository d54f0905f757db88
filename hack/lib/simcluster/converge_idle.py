"""The idle window after Ready, and the heartbeat gap the bench may put into it.

After Ready the operator should do nothing at all: no write, no read but its watches.
What it did in the window is counted from its own counters (requests, CPU, passes, the
watch events that woke it) and from the audit log (its writes, split by verb, resource
and subresource: who wrote what is the first question when the count is not zero).

``--blink SECONDS`` pauses the simulated kubelets (kwok and devsim, SIGSTOP to their recorded pids) at the
start of the window, for longer than the node controller's grace period (``hack/cluster``
sets 200 s): every node goes NotReady, the node controller takes ``Ready`` from every pod
and taints the nodes, and when they run again (SIGCONT) it all comes back. That is what
a large fleet does all the time while heartbeats lag (at 5,000 simulated nodes, hundreds of
nodes at a time), and nothing of it is news of a driver: the operator should write nothing
through it. The window goes on until every node reports Ready again and ``--idle`` seconds
have passed, whichever is later.
"""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

from simcluster import audit, converge_sro, daemons, kube, layout, nodes

KUBELETS = ("kwok", "devsim")
"""What the simulated kubelets are: kwok renews the Leases, devsim reports node status."""
POLL = 5.0
"""Seconds between two counts of NotReady nodes while the kubelets are paused and coming back."""


async def _count_not_ready(client: kube.Kube) -> int:
    listed = await client.get("/api/v1/nodes", request_seconds=120)
    return sum(1 for n in listed["items"] if not nodes.ready(n))


async def blink(run: layout.RunDir, client: kube.Kube, *, seconds: float, within: float) -> dict[str, Any]:
    """Pauses the simulated kubelets for ``seconds``, then waits (up to ``within``) for every
    node to be Ready; how many were NotReady at most, and how long they took to come back."""
    records = [daemons.load(run.pids, name) for name in KUBELETS]
    for name, record in zip(KUBELETS, records, strict=True):
        if record is None or not daemons.send(record, signal.SIGSTOP):
            for other in records:  # what was paused runs again
                if other is not None:
                    daemons.send(other, signal.SIGCONT)
            raise RuntimeError(f"{name} is not running: no heartbeat gap to make")
    paused = time.monotonic()
    worst = 0
    try:
        while time.monotonic() - paused < seconds:
            worst = max(worst, await _count_not_ready(client))
            await asyncio.sleep(min(POLL, max(0.0, seconds - (time.monotonic() - paused))))
        worst = max(worst, await _count_not_ready(client))
    finally:
        for record in records:
            if record is not None:
                daemons.send(record, signal.SIGCONT)
    resumed = time.monotonic()
    print(f"idle: kubelets paused {seconds:.0f} s, {worst} nodes NotReady at most; resumed", flush=True)
    left = worst
    while left and time.monotonic() - resumed < within:
        await asyncio.sleep(POLL)
        left = await _count_not_ready(client)
    return {
        "paused_seconds": seconds,
        "nodes_not_ready_max": worst,
        "nodes_not_ready_after": left,
        "seconds_to_ready_again": time.monotonic() - resumed,
    }


async def window(
    operator: converge_sro.Operator,
    *,
    run: layout.RunDir,
    client: kube.Kube,
    seconds: float,
    blink_seconds: float,
    within: float,
) -> dict[str, Any]:
    """The idle figures: ``seconds`` of idle (more with a heartbeat gap, see above)."""
    first = operator.scrape()
    cpu0 = operator.cpu_seconds()  # after the read of /metrics, which costs it CPU
    started, t0 = time.monotonic(), time.time()
    gap = await blink(run, client, seconds=blink_seconds, within=within) if blink_seconds > 0 else None
    await asyncio.sleep(max(0.0, seconds - (time.monotonic() - started)))  # the window is the measurement
    elapsed = time.monotonic() - started
    cpu = operator.cpu_seconds() - cpu0  # before the read of /metrics
    last = operator.scrape()
    requests = converge_sro.diff(last.requests(), first.requests())
    writes = [w for w in audit.read(run.audit_log) if w.by_sro and w.time.timestamp() >= t0]
    figures: dict[str, Any] = {
        "seconds": elapsed,
        "requests_non_watch": converge_sro.non_watch(requests),
        "writes": len(writes),
        "writes_by": audit.tally(writes),
        "cpu_seconds": cpu,
        # what woke the operator: passes it ran, and the watch events it read
        "passes": last.passes() - first.passes(),
        **last.streams_since(first),
    }
    if gap is not None:
        figures["blink"] = gap
    return figures
