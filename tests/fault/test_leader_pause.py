"""The leader frozen (SIGSTOP) for longer than its Lease while a standby runs, then thawed.

The standby takes the Lease once it has gone unchanged for its duration; the thawed
process still believes it leads, but its writer's fence (a renewal older than the renew
deadline) refuses every mutating request, and its next renewal finds another holder, so
it exits 1 and is started again as a standby. The audit proves the frozen process sent no
write after the standby's ``acquireTime``. Short form: one pause while converging; long
form: a pause in the converge and kernel phases of five rounds.
"""

from __future__ import annotations

import time
from collections import Counter

import faults
import pytest
import verdict
from conftest import REPORT, Rig, rounds
from support import waiting

ROUNDS = rounds(short=1, long=5)
PAUSE = 22.0  # seconds frozen: past the Lease's 15 s and a standby's 2 s retry
pytestmark = [pytest.mark.fault, pytest.mark.timeout(300 + 300 * ROUNDS)]


async def test_a_frozen_leader_is_replaced_and_sends_nothing_after_the_takeover(rig: Rig) -> None:
    fleet = rig.start_fleet(replicas=2)
    await fleet.wait_leader()
    counts: Counter[str] = Counter()
    paused: list[str] = []
    thawed: dict[str, float] = {}  # user -> when it got SIGCONT

    async def freeze() -> str:
        leader = await fleet.wait_leader()
        others = [p for p in fleet.running if p is not leader]
        assert others, "a standby is running"
        counts["leader SIGSTOP"] += 1
        paused.append(leader.user)
        what = await faults.pause(leader, seconds=PAUSE)
        thawed[leader.user] = time.time()
        # Thawed, it must find out and leave (exit 1); a standby leads instead.
        try:
            await waiting.wait_for(
                lambda: not leader.alive(), timeout=40, message=f"{leader.user} exits after thaw"
            )
        except AssertionError as e:
            raise AssertionError(f"{e}; its log ends:\n{leader.tail(40)}") from None
        assert leader.proc.returncode == 1, leader.tail()
        new = await fleet.wait_leader(within=40)
        assert new is not leader
        return what

    for number in range(ROUNDS):
        await rig.play_round(converge=freeze, kernel=freeze if number % 2 else None, teardown=None)
    rig.judge(fleet, test="leader pauses", faults=dict(counts))
    lost = {e.user for e in fleet.exits if e.lost_lease and e.code == 1}
    assert set(paused) <= lost, "every frozen leader left with 'lost the lease'"
    # Stricter than the verdict: once thawed, a frozen leader sends nothing at all, not even
    # a Lease write (it reads the Lease, sees another holder, and leaves).
    writes = verdict.audit.read(rig.cluster.audit_log)
    late = [w for w in writes if w.user in thawed and w.time >= verdict.utc(thawed[w.user])]
    assert not late, late
    REPORT.append(f"  writes by a frozen leader after its thaw: {len(late)}")
