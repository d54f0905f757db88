"""``sro run`` SIGKILLed at random points of every phase and started again.

A killed leader releases nothing: its successor waits out the Lease (15 s) and then
finishes what the dead one left half done, from the caches it lists again. Each round ends
converged and clean, and the audit finds every write made by the Lease's holder of the
moment, no driver pod replaced twice and no Event posted twice. Short form: one round
(three kills); long form: ten (thirty kills).
"""

from __future__ import annotations

from collections import Counter

import faults
import lifecycle
import pytest
import verdict
from conftest import REPORT, Rig, rounds

ROUNDS = rounds(short=1, long=10)
pytestmark = [pytest.mark.fault, pytest.mark.timeout(300 + 300 * ROUNDS)]


async def test_sro_killed_in_every_phase_and_restarted_loses_nothing(rig: Rig) -> None:
    fleet = rig.start_fleet(replicas=1)
    await fleet.wait_leader()
    counts: Counter[str] = Counter()

    async def kill() -> str:
        leader = await fleet.wait_leader()
        counts["sro SIGKILL"] += 1
        return faults.kill_leader(fleet, leader=leader)

    for _ in range(ROUNDS):
        r = rig.new_round()
        await r.converge(selector=rig.selector, fault=kill)
        assert not lifecycle.duplicates(rig.cluster, name=r.name)
        await r.kernel_change(fault=kill)
        assert not lifecycle.duplicates(rig.cluster, name=r.name)
        await r.teardown(fault=kill)
        rig.close_round(r)

    REPORT.extend(rig.report("sro kills", faults=dict(counts)))
    totals = verdict.judge(
        cluster=rig.cluster,
        fleet=fleet,
        rec=rig.recorder,
        rounds=rig.rounds,
        events=rig.events,
        since=rig.since,
    )
    REPORT.append("  " + totals.line())
    killed = [e for e in fleet.exits if e.asked and e.code == -9]
    assert len(killed) == counts["sro SIGKILL"] == 3 * ROUNDS
    # Each kill hands the Lease on to a new process (the last one may find nothing left to do).
    assert totals.acquisitions >= len(killed)
