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
import pytest
from conftest import Rig, rounds

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
        await rig.play_round(converge=kill, kernel=kill, teardown=kill)
    totals = rig.judge(fleet, test="sro kills", faults=dict(counts))
    killed = [e for e in fleet.exits if e.asked and e.code == -9]
    assert len(killed) == counts["sro SIGKILL"] == 3 * ROUNDS
    # Each kill hands the Lease on to a new process (the last one may find nothing left to do).
    assert totals.acquisitions >= len(killed)
