"""kube-apiserver killed (SIGKILL, then restarted) at random points of every phase, and
etcd compacted while sro watches: nothing is lost, nothing is done twice.

Each round is a SpecialResource's whole life (converge, a kernel change, deletion); the
API server dies once at a random point of each phase, and in the kernel phase etcd is
compacted too, so every watch sro resumes answers 410 and must relist. Each round ends
converged and then clean; the audit (``verdict``) finds no duplicate driver pod, Event or
write out of turn. Short form: one round; long form: seven (21 kills, 7 compactions).
"""

from __future__ import annotations

from collections import Counter

import faults
import lifecycle
import pytest
import verdict
from conftest import REPORT, Rig, rounds

ROUNDS = rounds(short=1, long=7)
pytestmark = [pytest.mark.fault, pytest.mark.timeout(300 + 240 * ROUNDS)]


async def test_apiserver_killed_in_every_phase_and_etcd_compacted_loses_nothing(rig: Rig) -> None:
    fleet = rig.start_fleet(replicas=1)
    await fleet.wait_leader()
    counts: Counter[str] = Counter()

    async def kill() -> str:
        counts["apiserver SIGKILL"] += 1
        return faults.kill_apiserver(rig.cluster)

    async def kill_and_compact() -> str:
        first = await kill()
        counts["etcd compaction"] += 1
        return f"{first}, {faults.compact(rig.cluster)}"

    for _ in range(ROUNDS):
        r = rig.new_round()
        await r.converge(selector=rig.selector, fault=kill)
        assert not lifecycle.duplicates(rig.cluster, name=r.name)
        await r.kernel_change(fault=kill_and_compact)
        assert not lifecycle.duplicates(rig.cluster, name=r.name)
        await r.teardown(fault=kill)
        rig.close_round(r)

    lines = rig.report("apiserver kills", faults=dict(counts))
    REPORT.extend(lines)
    totals = verdict.judge(
        cluster=rig.cluster,
        fleet=fleet,
        rec=rig.recorder,
        rounds=rig.rounds,
        events=rig.events,
        since=rig.since,
    )
    REPORT.append("  " + totals.line())
    assert sum(counts.values()) == 4 * ROUNDS
