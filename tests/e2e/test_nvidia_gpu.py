"""nvidia-gpu end to end: the state order on every node, devices before validation, parallel states.

Covers acceptance test 2 (60 nodes: 50 with the NVIDIA PCI label over 4 kernels and 2 OS
releases, 10 without): Ready; on each GPU node the driver pod was Ready before the
container toolkit's pod was created, the toolkit's pod was Ready before its validation pod
was created, and that validation succeeded before the device plugin pod was created; the
device-plugin validation pod was scheduled only after the node showed ``nvidia.com/gpu``;
monitoring and feature discovery overlapped; the nodes without the label got nothing.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique

pytestmark = pytest.mark.e2e

GPU_POOLS = (
    (13, "5.14.0-427.13.1.el9_4.x86_64", "rhel", "9.4"),
    (13, "5.14.0-427.42.1.el9_4.x86_64", "rhel", "9.4"),
    (12, "5.15.0-105-generic", "ubuntu", "22.04"),
    (12, "5.15.0-119-generic", "ubuntu", "22.04"),
)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _ready_since(pod: dict[str, Any]) -> datetime | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            return _time(cond["lastTransitionTime"])
    return None


def _state_of(pod: dict[str, Any], ds_states: dict[str, str]) -> str:
    """A bare pod's own ``sro.dev/state`` label, or its DaemonSet's."""
    labels = pod["metadata"].get("labels") or {}
    if "sro.dev/state" in labels:
        return str(labels["sro.dev/state"])
    owners = pod["metadata"].get("ownerReferences") or []
    return next((ds_states.get(o["name"], "") for o in owners if o.get("kind") == "DaemonSet"), "")


async def test_nvidia_gpu_walks_every_gpu_node_in_order_and_leaves_other_nodes_alone(made: Made) -> None:
    pools = [
        {
            "count": n,
            "kernel": k,
            "os": {"id": os_id, "versionId": v},
            "pci": ["10de"],
            "devices": {"nvidia.com/gpu": 8},
        }
        for n, k, os_id, v in GPU_POOLS
    ]
    cpu_pool = {"count": 10, "kernel": GPU_POOLS[0][1], "os": {"id": "rhel", "versionId": "9.4"}, "pci": []}
    pools.append(cpu_pool)
    group, nodes = made.group("gpu", pools)
    assert len(nodes) == 60
    selector = {srs.GROUP_LABEL: group, srs.GPU_LABEL: "true"}
    start = time.monotonic()
    name = made.sr(srs.manifest(unique("gpu"), recipe="nvidia-gpu", node_selector=selector))

    status = await srs.wait_ready(made.cluster, name, within=420)
    print(f"nvidia-gpu on 50 of 60 nodes Ready after {time.monotonic() - start:.1f}s")
    assert status["nodes"] == {"selected": 50, "complete": 50}
    assert len(status["kernels"]) == 4

    gpu_node_objects = srs.nodes(made.cluster, selector)
    gpu_nodes = {n["metadata"]["name"] for n in gpu_node_objects}
    assert len(gpu_nodes) == 50
    assert all(n["status"]["allocatable"].get("nvidia.com/gpu") == "8" for n in gpu_node_objects)
    pods = srs.pods(made.cluster, name)
    ds_states = {
        ds["metadata"]["name"]: ds["metadata"]["labels"]["sro.dev/state"]
        for ds in srs.owned(made.cluster, "daemonsets", name, namespace=name)
    }
    by_node: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName", "")
        by_node.setdefault(node, {}).setdefault(_state_of(pod, ds_states), []).append(pod)
    assert set(by_node) == gpu_nodes, "pods ran only on the GPU nodes, on all of them"

    for node in sorted(gpu_nodes):
        states = by_node[node]
        driver = states["state-driver"][0]
        toolkit = states["state-container-toolkit"][0]
        toolkit_check = states["state-container-toolkit-validation"][0]
        plugin = states["state-device-plugin"][0]
        driver_ready = _ready_since(driver)
        assert driver_ready is not None, node
        assert driver_ready <= _time(toolkit["metadata"]["creationTimestamp"]), node
        toolkit_ready = _ready_since(toolkit)
        assert toolkit_ready is not None, node
        assert toolkit_ready <= _time(toolkit_check["metadata"]["creationTimestamp"]), node
        assert toolkit_check["status"]["phase"] == "Succeeded", node
        assert _time(toolkit_check["metadata"]["creationTimestamp"]) <= _time(
            plugin["metadata"]["creationTimestamp"]
        ), node
        validation = states["state-device-plugin-validation"][0]
        # A per-node pod is bound by nodeName at creation: its creation is its scheduling.
        # The device plugin's pod being Ready is when the node's nvidia.com/gpu appeared.
        plugin_ready = _ready_since(plugin)
        assert plugin_ready is not None, node
        assert plugin_ready <= _time(validation["metadata"]["creationTimestamp"]), node
        assert validation["status"]["phase"] == "Succeeded", node

    monitoring = [p for s in by_node.values() for p in s.get("state-monitoring", [])]
    discovery = [p for s in by_node.values() for p in s.get("state-feature-discovery", [])]
    assert monitoring and discovery
    first_m = min(_time(p["metadata"]["creationTimestamp"]) for p in monitoring)
    last_m = max(_time(p["metadata"]["creationTimestamp"]) for p in monitoring)
    first_d = min(_time(p["metadata"]["creationTimestamp"]) for p in discovery)
    last_d = max(_time(p["metadata"]["creationTimestamp"]) for p in discovery)
    assert first_m <= last_d and first_d <= last_m, "monitoring and feature discovery overlapped in time"

    for node in srs.nodes(made.cluster, {srs.GROUP_LABEL: group}):
        if node["metadata"]["name"] not in gpu_nodes:
            assert srs.sr_labels(node, name) == {}, node["metadata"]["name"]
