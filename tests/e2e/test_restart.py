"""An operator restart while everything is Ready writes nothing.

Covers acceptance test 5: after ``sro run`` restarts and reconciles every SpecialResource
from its caches, its own API request metrics show no write at all (no apply, status,
node patch or Event), and the SpecialResource's status is byte-for-byte what it was; and,
by the API server's audit log, that a restart under another operator image (an upgrade of
sro itself) followed by an edit of fields no pod template is rendered from (the upgrade
policy, a label) deletes no pod, whoever asks, and writes no DaemonSet.
Also what the restarted operator exports about it: every state complete on its three
nodes in ``sro_specialresource_state_nodes``, a resource on every request counted, and
the event loop it started on (uvloop) in its first lines.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from simcluster import audit
from support import waiting

pytestmark = pytest.mark.e2e


async def test_a_restart_while_ready_makes_no_write_and_leaves_status_unchanged(
    made: Made, operator: Operator
) -> None:
    group, _ = made.group(
        "rst", [{"count": 3, "kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}}]
    )
    name = made.sr(srs.manifest(unique("rst"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group}))
    await srs.wait_ready(made.cluster, name, within=180)
    before = srs.get(made.cluster, name)
    assert before is not None

    operator.restart()
    await waiting.wait_for(
        operator.idle, timeout=60, interval=0.5, message="the restarted operator reconciled everything"
    )
    requests = [m for m in operator.metrics() if m[0] == "sro_api_requests_total" and m[2]]
    assert operator.writes() == 0, requests
    # and it runs on uvloop, as 'sro run' does unless told otherwise (--event-loop)
    lines = operator.log_path.read_text().splitlines()
    starting = [json.loads(line) for line in lines if '"starting"' in line]
    assert [line["event_loop"] for line in starting] == ["uvloop"], starting
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

    await waiting.wait_for(
        lambda: len(state_nodes()) == 4 * len(states),
        timeout=30,
        interval=0.5,
        message="the per-state node gauge of the SpecialResource",
    )
    counts = state_nodes()
    assert {s: counts[(s, "Complete")] for s in states} == dict.fromkeys(states, 3.0), counts
    assert sum(counts.values()) == 3 * len(states), counts
    unnamed = [m for m in operator.metrics() if m[0] == "sro_api_requests_total" and not m[1].get("resource")]
    assert not unnamed, unnamed


async def test_a_restart_and_an_edit_of_fields_outside_the_pod_templates_delete_no_pod(
    made: Made, operator: Operator
) -> None:
    group, _ = made.group(
        "nodel", [{"count": 3, "kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}}]
    )
    body = srs.manifest(unique("nodel"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group})
    name = made.sr(body)
    await srs.wait_ready(made.cluster, name, within=180)
    since = datetime.now(UTC)

    # As an upgrade of sro itself does: the same operator under another image. The built-in
    # recipes render no pod template from it, so nothing may be replaced.
    defaults = operator.extra_args
    operator.extra_args = (*defaults, "--image", "registry.example/sro/sro:9.9.9")
    try:
        operator.restart()
        await waiting.wait_for(
            operator.idle, timeout=60, interval=0.5, message="the restarted operator reconciled everything"
        )
    finally:
        operator.extra_args = defaults
    # Fields no pod template is rendered from: the upgrade policy, and a label.
    made.cluster.kubectl(
        "patch",
        "sr",
        name,
        "--type=merge",
        "-p",
        json.dumps({"metadata": {"labels": {"team": "gpu"}}, "spec": {"upgradePolicy": {"maxParallel": 3}}}),
    )
    edited = (srs.get(made.cluster, name) or {})["metadata"]["generation"]

    def reconciled() -> bool | None:
        found = srs.condition(srs.status(made.cluster, name), "Ready")
        return (found.get("status") == "True" and found.get("observedGeneration") == edited) or None

    await waiting.wait_for(reconciled, timeout=60, interval=0.5, message="the edit reconciled, still Ready")
    await waiting.wait_for(operator.idle, timeout=60, interval=0.5, message="the queue drained")
    writes = audit.since(audit.read(made.cluster.audit_log), since)
    deleted = [w for w in writes if w.verb == "delete" and w.resource == "pods" and w.namespace == name]
    assert deleted == [], deleted  # by anyone: sro, the DaemonSet controller, the garbage collector
    by_sro = audit.by_agent(writes, audit.SRO_AGENT_PREFIX)
    assert not [w for w in by_sro if w.verb == "delete"]
    assert not [w for w in by_sro if w.resource == "daemonsets"], "no pod template was written again"
