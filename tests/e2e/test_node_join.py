"""A new GPU node joins: it walks the states in order, and nothing on the other nodes moves.

Covers acceptance test 4: pod creation times on the new node prove the order (driver
Ready before the device plugin's pod exists, the device plugin Ready before its
validation pod exists); the pods on the other nodes are the very same pods as before.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique

pytestmark = pytest.mark.e2e

KERNEL = "5.14.0-427.13.1.el9_4.x86_64"
POOL = {
    "kernel": KERNEL,
    "os": {"id": "rhel", "versionId": "9.4"},
    "pci": ["10de"],
    "devices": {"nvidia.com/gpu": 8},
}


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _ready_since(pod: dict[str, Any]) -> datetime:
    cond = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready" and c["status"] == "True")
    return _time(cond["lastTransitionTime"])


def _created(pod: dict[str, Any]) -> datetime:
    return _time(pod["metadata"]["creationTimestamp"])


async def test_a_joining_gpu_node_walks_the_states_in_order_and_the_others_are_untouched(made: Made) -> None:
    group, first = made.group("join", [{"count": 3, **POOL}])
    selector = {srs.GROUP_LABEL: group}
    name = made.sr(srs.manifest(unique("join"), recipe="nvidia-gpu", node_selector=selector))
    await srs.wait_ready(made.cluster, name, within=240)
    before = {p["metadata"]["uid"] for p in srs.pods(made.cluster, name)}
    generations = {
        d["metadata"]["name"]: d["metadata"]["generation"]
        for d in srs.owned(made.cluster, "daemonsets", name, namespace=name)
    }

    joined = made.cluster.add_nodes(
        srs.pool_inventory(group, [{"count": 1, "prefix": f"{group}-late", "name": f"{group}-late", **POOL}])
    )
    made.nodes.extend(joined)
    counts = {"selected": 4, "complete": 4}
    status = await srs.wait_ready(made.cluster, name, within=240, where=lambda s: s.get("nodes") == counts)
    assert status["nodes"] == counts

    by_node = srs.pods_by_node_and_state(made.cluster, name)
    new = by_node[joined[0]]
    assert _ready_since(new["state-driver"][0]) <= _created(new["state-driver-validation"][0])
    assert _created(new["state-driver-validation"][0]) <= _created(new["state-container-toolkit"][0])
    toolkit = new["state-container-toolkit"][0]
    assert _ready_since(toolkit) <= _created(new["state-container-toolkit-validation"][0])
    assert _created(new["state-container-toolkit-validation"][0]) <= _created(new["state-device-plugin"][0])
    assert _ready_since(new["state-device-plugin"][0]) <= _created(new["state-device-plugin-validation"][0])
    assert _created(new["state-device-plugin-validation"][0]) <= _created(new["state-monitoring"][0])

    after_others = {
        p["metadata"]["uid"]
        for node, states in by_node.items()
        if node in first
        for pods in states.values()
        for p in pods
    }
    assert after_others <= before, "the pods on the other nodes are the same pods"
    assert len(after_others) == len([p for p in before if p in after_others])
    assert {
        d["metadata"]["name"]: d["metadata"]["generation"]
        for d in srs.owned(made.cluster, "daemonsets", name, namespace=name)
    } == generations
