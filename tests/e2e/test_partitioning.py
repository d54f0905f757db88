"""Hard partitioning: a SpecialResource's ``spec.taints`` keep other work off its nodes.

The taints land on every selected node and only there; a CPU-only pod is repelled from
those nodes while a pod requesting the extended resource (``nvidia.com/gpu``, which
appears once the device-plugin state runs) lands there, because the API server's
ExtendedResourceToleration admission plugin gives it the toleration. When a node leaves
the selector, or the SpecialResource is deleted, sro takes off only the taints it put
there: a taint someone else placed — even one equal to sro's — stays. sro's per-node pods
tolerate the node controller's not-ready and unreachable taints with no time limit, as
DaemonSet pods do. The PriorityClasses
of ``spec.priorityClasses`` exist while the SpecialResource does and go with it.

Preemption between priority classes is test_priority.py's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique
from support import waiting

pytestmark = pytest.mark.e2e

RHEL = {"kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}


def _taint_keys(node: dict[str, object]) -> list[tuple[str, str]]:
    spec = node.get("spec") or {}
    assert isinstance(spec, dict)
    return [(t["key"], t.get("value", "")) for t in spec.get("taints") or ()]


KERNEL = "5.14.0-427.13.1.el9_4.x86_64"
GPU = {
    "kernel": KERNEL,
    "os": {"id": "rhel", "versionId": "9.4"},
    "pci": ["10de"],
    "devices": {"nvidia.com/gpu": 2},
}
CPU = {"kernel": KERNEL, "os": {"id": "rhel", "versionId": "9.4"}, "pci": []}
SRO_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
# An administrator's taint with another key; PreferNoSchedule so sro's pods still run there.
FOREIGN_TAINT = {"key": "team.example.com/reserved", "value": "ml", "effect": "PreferNoSchedule"}


def _taints(made: Made, node: str) -> list[dict[str, str]]:
    body = made.cluster.kubectl_json("get", "node", node)
    return [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in body["spec"].get("taints") or ()]


def _taint(made: Made, node: str, taint: dict[str, str]) -> None:
    made.cluster.kubectl("taint", "node", node, f"{taint['key']}={taint['value']}:{taint['effect']}")


def _pod(name: str, *, node_selector: dict[str, str], gpus: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "work", "image": "registry.example.com/work:1"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeSelector": node_selector, "containers": [container]},
    }


def _scheduling(made: Made, namespace: str, name: str) -> dict[str, Any]:
    pod = made.cluster.kubectl_json("get", "pod", name, "-n", namespace)
    conditions = pod["status"].get("conditions") or ()
    cond: dict[str, Any] = next((c for c in conditions if c["type"] == "PodScheduled"), {})
    return {
        "node": pod["spec"].get("nodeName", ""),
        "status": cond.get("status", ""),
        "reason": cond.get("reason", ""),
        "message": cond.get("message", ""),
        "tolerations": pod["spec"].get("tolerations") or [],
    }


async def test_taints_land_on_selected_nodes_only_repel_cpu_pods_admit_gpu_pods_and_leave_foreign_taints(
    made: Made, namespace: str
) -> None:
    group, nodes = made.group("part", [{"count": 3, **GPU}, {"count": 1, **CPU}])
    gpu_nodes = sorted(n for n in nodes if n.startswith(f"{group}-0-"))
    (cpu_node,) = (n for n in nodes if n.startswith(f"{group}-1-"))
    # Before sro: one GPU node already carries sro's very taint (an administrator put it
    # there), another carries a taint of the administrator's own.
    preset, foreign, plain = gpu_nodes
    _taint(made, preset, SRO_TAINT)
    _taint(made, foreign, FOREIGN_TAINT)

    selector = {srs.GROUP_LABEL: group, srs.GPU_LABEL: "true"}
    # No patience with lost labels: the node that leaves the selector below is let go at once.
    name = made.sr(
        srs.manifest(
            unique("part"),
            recipe="nvidia-gpu",
            node_selector=selector,
            extra_spec={"taints": [SRO_TAINT], "nodeLossGracePeriodSeconds": 0},
        )
    )
    status = await srs.wait_ready(made.cluster, name, within=300)
    assert status["nodes"] == {"selected": 3, "complete": 3}

    # Every selected node carries the taint (once); the CPU node none.
    for node in gpu_nodes:
        assert _taints(made, node).count(SRO_TAINT) == 1, node
    assert _taints(made, cpu_node) == []
    assert FOREIGN_TAINT in _taints(made, foreign)

    # The device plugin made the extended resource appear on the GPU nodes.
    for node in gpu_nodes:
        allocatable = made.cluster.kubectl_json("get", "node", node)["status"]["allocatable"]
        assert allocatable.get("nvidia.com/gpu") == "2", (node, allocatable)

    # sro's per-node pods outlast the node controller's not-ready and unreachable taints as
    # the DaemonSets' pods do: the API server gave none of them its five-minute limit.
    node_pods = [
        p
        for p in srs.pods(made.cluster, name)
        if "sro.dev/node" in p["metadata"].get("labels", {})
        or any(o.get("kind") == "DaemonSet" for o in p["metadata"].get("ownerReferences") or ())
    ]
    assert any("sro.dev/node" in p["metadata"]["labels"] for p in node_pods), node_pods
    for pod in node_pods:
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            lasting = {"key": key, "operator": "Exists", "effect": "NoExecute"}
            assert lasting in pod["spec"]["tolerations"], (
                pod["metadata"]["name"],
                pod["spec"]["tolerations"],
            )

    # A CPU-only pod that may only go to the GPU nodes is repelled by the taint...
    on_gpu_nodes = {srs.GROUP_LABEL: group, srs.GPU_LABEL: "true"}
    made.cluster.create(_pod("cpu-only", node_selector=on_gpu_nodes), namespace=namespace)
    repelled = await waiting.wait_for(
        lambda: (s := _scheduling(made, namespace, "cpu-only"))["reason"] == "Unschedulable" and s,
        timeout=60,
        message="the CPU-only pod reported Unschedulable",
    )
    assert repelled["node"] == ""
    assert "3 node(s) had untolerated taint" in repelled["message"], repelled

    # ...while a pod asking for a GPU gets the toleration from the API server and lands.
    made.cluster.create(_pod("gpu-job", node_selector=on_gpu_nodes, gpus=1), namespace=namespace)
    landed = await waiting.wait_for(
        lambda: (s := _scheduling(made, namespace, "gpu-job"))["status"] == "True" and s,
        timeout=60,
        message="the GPU pod scheduled",
    )
    assert landed["node"] in gpu_nodes
    assert any(t.get("key") == "nvidia.com/gpu" for t in landed["tolerations"]), landed["tolerations"]

    # A CPU pod free to go anywhere in the group lands on the CPU node, the only untainted one.
    made.cluster.create(_pod("cpu-anywhere", node_selector={srs.GROUP_LABEL: group}), namespace=namespace)
    anywhere = await waiting.wait_for(
        lambda: (s := _scheduling(made, namespace, "cpu-anywhere"))["status"] == "True" and s,
        timeout=60,
        message="the unconstrained CPU pod scheduled",
    )
    assert anywhere["node"] == cpu_node

    # The plain node leaves the selector: sro takes its taint off, and only there.
    made.cluster.kubectl("label", "node", plain, f"{srs.GPU_LABEL}=false", "--overwrite")
    await waiting.wait_for(
        lambda: SRO_TAINT not in _taints(made, plain),
        timeout=90,
        message=f"sro's taint removed from {plain}, which left the selector",
    )
    await waiting.wait_for(
        lambda: srs.status(made.cluster, name).get("nodes", {}).get("selected") == 2,
        timeout=90,
        message="the SpecialResource selects two nodes",
    )
    assert SRO_TAINT in _taints(made, preset)
    assert SRO_TAINT in _taints(made, foreign)
    assert FOREIGN_TAINT in _taints(made, foreign)

    # Deleting the SpecialResource removes the taint sro added, and nothing else.
    srs.delete(made.cluster, name)
    await waiting.wait_for(
        lambda: srs.get(made.cluster, name) is None, timeout=180, message=f"SpecialResource {name} gone"
    )
    assert SRO_TAINT not in _taints(made, foreign), "sro added it there: it goes"
    assert _taints(made, foreign) == [FOREIGN_TAINT], "the administrator's taint stays"
    assert _taints(made, preset) == [SRO_TAINT], "the taint that was there before sro stays"
    assert _taints(made, plain) == []
    for node in gpu_nodes:
        annotations = made.cluster.kubectl_json("get", "node", node)["metadata"].get("annotations") or {}
        assert not [k for k in annotations if k.endswith(f".{name}")], (node, json.dumps(annotations))


async def test_taints_and_priority_classes_come_and_go_with_the_special_resource(made: Made) -> None:
    admin_taint = {"key": "e2e.sro.dev/admin", "value": "mine", "effect": "NoSchedule"}
    group, nodes = made.group("part", [{"count": 2, **RHEL}, {"count": 1, "taints": [admin_taint], **RHEL}])
    admins = next(n for n in nodes if n.startswith(f"{group}-1-"))
    pc_high, pc_low = unique("e2e-high"), unique("e2e-low")
    body = srs.manifest(
        unique("part"),
        recipe="simple-kmod",
        node_selector={srs.GROUP_LABEL: group},
        extra_spec={
            "taints": [{"key": "e2e.sro.dev/kmod", "value": "present", "effect": "NoSchedule"}, admin_taint],
            "priorityClasses": [
                {"name": pc_high, "value": 100000, "description": "high"},
                {"name": pc_low, "value": 10},
            ],
        },
    )
    name = made.sr(body)
    await srs.wait_ready(made.cluster, name, within=180)

    for node in srs.nodes(made.cluster, {srs.GROUP_LABEL: group}):
        keys = _taint_keys(node)
        assert ("e2e.sro.dev/kmod", "present") in keys
        assert keys.count(("e2e.sro.dev/admin", "mine")) == 1  # on every node, once
    classes = {p["metadata"]["name"]: p for p in srs.owned(made.cluster, "priorityclasses", name)}
    assert set(classes) == {pc_high, pc_low}
    assert classes[pc_high]["value"] == 100000 and classes[pc_low]["value"] == 10

    srs.delete(made.cluster, name)
    await waiting.wait_for(
        lambda: srs.get(made.cluster, name) is None,
        timeout=120,
        interval=0.5,
        message="the SpecialResource let go",
    )
    for node in srs.nodes(made.cluster, {srs.GROUP_LABEL: group}):
        keys = _taint_keys(node)
        assert ("e2e.sro.dev/kmod", "present") not in keys
        wanted_admin = [("e2e.sro.dev/admin", "mine")] if node["metadata"]["name"] == admins else []
        assert [k for k in keys if k[0] == "e2e.sro.dev/admin"] == wanted_admin, node["metadata"]["name"]
    assert srs.owned(made.cluster, "priorityclasses", name) == []
