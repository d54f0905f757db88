"""Patience with NFD: nodes that lose the labels that selected them are held, then let go.

Two kernel groups of nodes selected by an NFD label. Every node of one group loses the
label (as an nfd-master restart does) for a moment and gets it back: while it is gone
sro lists the nodes in ``status.heldNodes`` with when it would let them go, keeps the
group's DaemonSet (same uid) and its own node labels and taint record, and the
SpecialResource is Ready again once the labels are back. Then they lose it for longer
than the SpecialResource's ``nodeLossGracePeriodSeconds``: sro says why it waits while
it waits, and when the period ends their stack is torn down cleanly (the group's
DaemonSet deleted, sro's labels and taint gone from those nodes, no held nodes left) and
the rest stays Ready.

The DaemonSet controller itself removes a DaemonSet pod from a node whose labels no
longer match the pod template's nodeSelector, whatever sro waits for; what is held here
is what sro would otherwise remove.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from support import waiting

pytestmark = pytest.mark.e2e

GRACE = 20
KEPT = {"kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}
FLAPPING = {"kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}}
TAINT = {"key": "e2e.sro.dev/flaps", "value": "held", "effect": "NoSchedule"}


def _label(made: Made, nodes: list[str], value: str | None) -> None:
    change = f"{srs.GPU_LABEL}-" if value is None else f"{srs.GPU_LABEL}={value}"
    made.cluster.kubectl("label", "node", *nodes, change, "--overwrite")


def _group_daemonsets(made: Made, name: str) -> dict[str, str]:
    """Kernel -> uid of each live DaemonSet of the SpecialResource's kernel groups."""
    return {
        ds["spec"]["template"]["spec"]["nodeSelector"][srs.KERNEL_LABEL]: ds["metadata"]["uid"]
        for ds in srs.owned(made.cluster, "daemonsets", name, namespace=name)
        if not ds["metadata"].get("deletionTimestamp")
        and srs.KERNEL_LABEL in (ds["spec"]["template"]["spec"].get("nodeSelector") or {})
    }


def _flaps(operator: Operator) -> dict[str, float]:
    """``sro_node_label_flaps_total`` by outcome."""
    return {
        labels["outcome"]: value
        for name, labels, value in operator.metrics()
        if name == "sro_node_label_flaps_total"
    }


def _held(made: Made, name: str) -> list[dict[str, Any]]:
    return list(srs.status(made.cluster, name).get("heldNodes") or [])


def _all_held(made: Made, name: str, nodes: list[str]) -> list[dict[str, Any]] | None:
    held = _held(made, name)
    return held if sorted(h["node"] for h in held) == nodes else None


def _marks(made: Made, group: str, name: str) -> dict[str, tuple[dict[str, str], bool]]:
    """Node -> (sro's labels, whether the SpecialResource's taint is on it)."""
    out = {}
    for node in srs.nodes(made.cluster, {srs.GROUP_LABEL: group}):
        taints = node["spec"].get("taints") or []
        out[node["metadata"]["name"]] = (
            srs.sr_labels(node, name),
            any(t["key"] == TAINT["key"] for t in taints),
        )
    return out


async def test_a_label_flap_is_held_and_a_longer_loss_is_let_go_after_the_grace_period(
    made: Made, operator: Operator
) -> None:
    group, nodes = made.group(
        "flap", [{"count": 2, "pci": ["10de"], **KEPT}, {"count": 2, "pci": ["10de"], **FLAPPING}]
    )
    flapping = sorted(n for n in nodes if n.startswith(f"{group}-1-"))
    kept = sorted(n for n in nodes if n.startswith(f"{group}-0-"))
    name = made.sr(
        srs.manifest(
            unique("flap"),
            recipe="simple-kmod",
            node_selector={srs.GROUP_LABEL: group, srs.GPU_LABEL: "true"},
            extra_spec={"nodeLossGracePeriodSeconds": GRACE, "taints": [TAINT]},
        )
    )
    await srs.wait_ready(made.cluster, name, within=180)
    daemonsets = _group_daemonsets(made, name)
    assert set(daemonsets) == {KEPT["kernel"], FLAPPING["kernel"]}
    complete = f"{name}.sro.dev/complete"
    flaps = _flaps(operator)

    # A flap: the label goes and comes back well within the period.
    lost_at = datetime.now(UTC)
    _label(made, flapping, None)
    held = await waiting.wait_for(
        lambda: _all_held(made, name, flapping),
        timeout=30,
        interval=0.2,
        message="the flapping nodes listed as held",
    )
    assert sorted(h["node"] for h in held) == flapping
    for row in held:
        assert row["missingLabels"] == [srs.GPU_LABEL]
        until = datetime.fromisoformat(row["until"].replace("Z", "+00:00"))
        assert 0 < (until - lost_at).total_seconds() <= GRACE + 5, row
    assert _group_daemonsets(made, name) == daemonsets
    marks = _marks(made, group, name)
    assert all(marks[n][1] for n in flapping), marks  # sro's taint stays on held nodes
    _label(made, flapping, "true")
    counts = {"selected": 4, "complete": 4}
    status = await srs.wait_ready(
        made.cluster, name, within=120, where=lambda s: not s.get("heldNodes") and s.get("nodes") == counts
    )
    assert not status.get("heldNodes")
    assert status["nodes"] == counts
    assert _group_daemonsets(made, name) == daemonsets  # the group's DaemonSet was never deleted
    counted = _flaps(operator)
    assert counted["seen"] - flaps["seen"] >= 2 and counted["absorbed"] - flaps["absorbed"] >= 2, counted

    # A loss longer than the period: held while it lasts, then torn down.
    lost_at = datetime.now(UTC)
    _label(made, flapping, None)
    await waiting.wait_for(
        lambda: _all_held(made, name, flapping), timeout=30, interval=0.2, message="the nodes held again"
    )
    while (datetime.now(UTC) - lost_at).total_seconds() < GRACE - 5:  # still within the period
        assert FLAPPING["kernel"] in _group_daemonsets(made, name)
        assert sorted(h["node"] for h in _held(made, name)) == flapping
        await asyncio.sleep(1)  # sampling the period, not waiting for readiness

    def let_go() -> dict[str, Any] | None:
        status = srs.status(made.cluster, name)
        if status.get("heldNodes") or FLAPPING["kernel"] in _group_daemonsets(made, name):
            return None
        marks = _marks(made, group, name)
        if any(marks[n][0] or marks[n][1] for n in flapping):
            return None
        return status if srs.ready_condition(status) else None

    status = await waiting.wait_for(let_go, timeout=GRACE + 60, interval=0.5, message="the lost nodes let go")
    assert (datetime.now(UTC) - lost_at).total_seconds() >= GRACE - 1
    assert status["nodes"] == {"selected": 2, "complete": 2}
    assert _flaps(operator)["released"] - flaps["released"] >= 2
    assert _group_daemonsets(made, name) == {KEPT["kernel"]: daemonsets[KEPT["kernel"]]}
    marks = _marks(made, group, name)
    assert all(marks[n][0].get(complete) == "true" and marks[n][1] for n in kept), marks
