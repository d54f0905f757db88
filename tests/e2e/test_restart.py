"""An operator restart while everything is Ready writes nothing.

Covers acceptance test 5: after ``sro run`` restarts and reconciles every SpecialResource
from its caches, its own API request metrics show no write at all (no apply, status,
node patch or Event), and the SpecialResource's status is byte-for-byte what it was.
Also what the restarted operator exports about it: every state complete on its three
nodes in ``sro_specialresource_state_nodes``, and a resource on every request counted.
"""

from __future__ import annotations

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from support import waiting

pytestmark = pytest.mark.e2e


def _settled(operator: Operator) -> bool:
    values = {(n, tuple(sorted(labels.items()))): v for n, labels, v in operator.metrics()}
    reconciled = sum(v for (n, _), v in values.items() if n == "sro_reconcile_total")
    depth = values.get(("sro_workqueue_depth", ()), 1.0)
    active = values.get(("sro_active_workers", ()), 1.0)
    return reconciled >= 1 and depth == 0 and active == 0


async def test_a_restart_while_ready_makes_no_write_and_leaves_status_unchanged(
    made: Made, operator: Operator
) -> None:
    group, _ = made.group("rst", [{"count": 3, "kernel": "5.15.0-105-generic",
                                   "os": {"id": "ubuntu", "versionId": "22.04"}}])
    name = made.sr(srs.manifest(unique("rst"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group}))
    await srs.wait_ready(made.cluster, name, within=180)
    before = srs.get(made.cluster, name)
    assert before is not None

    operator.restart()
    await waiting.wait_for(lambda: _settled(operator), timeout=60, interval=0.5,
                           message="the restarted operator reconciled everything")
    requests = [m for m in operator.metrics() if m[0] == "sro_api_requests_total" and m[2]]
    assert operator.writes() == 0, requests
    after = srs.get(made.cluster, name)
    assert after is not None
    assert after["status"] == before["status"]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    states = [row["name"] for row in after["status"]["states"]]

    def state_nodes() -> dict[tuple[str, str], float]:
        return {
            (labels["state"], labels["phase"]): v
            for n, labels, v in operator.metrics()
            if n == "sro_specialresource_state_nodes" and labels.get("name") == name
        }

    await waiting.wait_for(lambda: len(state_nodes()) == 4 * len(states), timeout=30, interval=0.5,
                           message="the per-state node gauge of the SpecialResource")
    counts = state_nodes()
    assert {s: counts[(s, "Complete")] for s in states} == dict.fromkeys(states, 3.0), counts
    assert sum(counts.values()) == 3 * len(states), counts
    unnamed = [m for m in operator.metrics() if m[0] == "sro_api_requests_total" and not m[1].get("resource")]
    assert not unnamed, unnamed
