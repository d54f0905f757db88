"""Soft partitioning: ``spec.priorityClasses`` let special-resource work preempt other work.

The PriorityClasses a SpecialResource lists are created with it, labelled and owned by it,
and removed with it. On a node whose extended resource (``nvidia.com/gpu``, made to appear
by the recipe's device-plugin state) is all taken by a low-priority pod, a pod of the
high-priority class asking for it preempts the low one and takes its place: the scheduler
does that, given the classes sro made.

Taints (hard partitioning) are test_partitioning.py's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique
from support import waiting

pytestmark = pytest.mark.e2e

ONE_GPU = {
    "kernel": "5.14.0-427.13.1.el9_4.x86_64",
    "os": {"id": "rhel", "versionId": "9.4"},
    "pci": ["10de"],
    "devices": {"nvidia.com/gpu": 1},
}


def _gpu_pod(name: str, *, priority_class: str, node_selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "priorityClassName": priority_class,
            "nodeSelector": node_selector,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "train",
                    "image": "registry.example.com/train:1",
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ],
        },
    }


def _pod(made: Made, namespace: str, name: str) -> dict[str, Any] | None:
    proc = made.cluster.kubectl("get", "pod", name, "-n", namespace, "-o", "json", check=False)
    if proc.returncode != 0:
        return None
    found: dict[str, Any] = json.loads(proc.stdout)
    return found


def _ready_on(pod: dict[str, Any] | None) -> str:
    """The node a pod runs Ready on, or ""."""
    if not pod or pod["metadata"].get("deletionTimestamp"):
        return ""
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or ())
    return str(pod["spec"].get("nodeName", "")) if ready else ""


async def test_priority_classes_are_owned_by_the_special_resource_and_high_priority_gpu_work_preempts_low(
    made: Made, namespace: str
) -> None:
    group, nodes = made.group("prio", [{"count": 1, **ONE_GPU}])
    node = nodes[0]
    high, low = unique("gpu-high"), unique("gpu-low")
    name = made.sr(
        srs.manifest(
            unique("prio"),
            recipe="nvidia-gpu",
            node_selector={srs.GROUP_LABEL: group, srs.GPU_LABEL: "true"},
            extra_spec={
                "priorityClasses": [
                    {"name": high, "value": 1000000, "description": "GPU work that may preempt"},
                    {"name": low, "value": 100, "description": "preemptible GPU work"},
                ]
            },
        )
    )
    await srs.wait_ready(made.cluster, name, within=300)

    sr_uid = srs.get(made.cluster, name)["metadata"]["uid"]  # type: ignore[index]
    classes = {p["metadata"]["name"]: p for p in srs.owned(made.cluster, "priorityclasses", name)}
    assert set(classes) == {high, low}
    assert classes[high]["value"] == 1000000 and classes[low]["value"] == 100
    assert classes[high].get("description") == "GPU work that may preempt"
    for pc in classes.values():
        owners = pc["metadata"].get("ownerReferences") or []
        refs = [(o["kind"], o["name"], o["uid"]) for o in owners]
        assert refs == [("SpecialResource", name, sr_uid)], owners

    allocatable = made.cluster.kubectl_json("get", "node", node)["status"]["allocatable"]
    assert allocatable.get("nvidia.com/gpu") == "1", allocatable

    # The node's only GPU goes to low-priority work...
    here = {srs.GROUP_LABEL: group}
    made.cluster.create(_gpu_pod("low-work", priority_class=low, node_selector=here), namespace=namespace)
    await waiting.wait_for(
        lambda: _ready_on(_pod(made, namespace, "low-work")) == node,
        timeout=60,
        message="the low-priority GPU pod runs on the node",
    )
    low_uid = _pod(made, namespace, "low-work")["metadata"]["uid"]  # type: ignore[index]

    # ...until high-priority work asks for it: the scheduler evicts the low pod for it.
    made.cluster.create(_gpu_pod("high-work", priority_class=high, node_selector=here), namespace=namespace)
    await waiting.wait_for(
        lambda: _ready_on(_pod(made, namespace, "high-work")) == node,
        timeout=120,
        message="the high-priority GPU pod runs on the node",
    )
    # The node has one GPU, so the high pod runs only because the low one was preempted.
    victim = _pod(made, namespace, "low-work")
    assert victim is None or victim["metadata"]["uid"] != low_uid or _ready_on(victim) == "", victim
    high_pod = _pod(made, namespace, "high-work")
    assert high_pod is not None and high_pod["spec"]["priority"] == 1000000

    # The classes go with the SpecialResource.
    srs.delete(made.cluster, name)
    await waiting.wait_for(
        lambda: srs.get(made.cluster, name) is None, timeout=180, message=f"SpecialResource {name} gone"
    )
    for class_name in (high, low):
        gone = made.cluster.kubectl("get", "priorityclass", class_name, check=False).returncode != 0
        assert gone, class_name
