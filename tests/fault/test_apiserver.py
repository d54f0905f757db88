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
import pytest
from conftest import Rig, rounds

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
        await rig.play_round(converge=kill, kernel=kill_and_compact, teardown=kill)
    rig.judge(fleet, test="apiserver kills", faults=dict(counts))
    assert sum(counts.values()) == 4 * ROUNDS
