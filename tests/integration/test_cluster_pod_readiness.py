"""What the simulated kubelet does for pods that a real one does too.

A pod the node controller marked not Ready gets Ready back once its node reports (a
kubelet's next status sync); without it a node whose heartbeats lagged once kept its pods
not Ready for good (as 5,000 kwok nodes on two cores did). A pod being deleted goes at
once, and a pod made under its name afterwards stays.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.cluster import Cluster
from support.waiting import wait_for_sync

pytestmark = pytest.mark.integration


def _condition(obj: dict[str, Any], kind: str) -> str:
    return next((c["status"] for c in obj["status"].get("conditions", []) if c["type"] == kind), "")


def _set_condition(cluster: Cluster, *args: str, kind: str, status: str) -> None:
    body = {"status": {"conditions": [{"type": kind, "status": status}]}}
    cluster.kubectl("patch", *args, "--subresource=status", "--type=strategic", "-p", json.dumps(body))


def test_ready_comes_back_when_the_node_reports_again(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    pool = node_pool(count=1)
    node = pool.nodes[0]
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "daemon"},
            "spec": {"nodeSelector": pool.selector, "containers": [{"name": "main", "image": "example/d:1"}]},
        },
        namespace=namespace,
    )

    def pod() -> dict[str, Any]:
        return cluster.kubectl_json("get", "pod", "daemon", "-n", namespace)

    wait_for_sync(lambda: _condition(pod(), "Ready") == "True", timeout=60, message="pod Ready")

    # What the node lifecycle controller does when the node's heartbeats stop.
    _set_condition(cluster, "node", node, kind="Ready", status="Unknown")
    _set_condition(cluster, "pod", "daemon", "-n", namespace, kind="Ready", status="False")
    marked = pod()
    assert _condition(marked, "ContainersReady") == "True"
    # The node reports again (kwok's next heartbeat): the pod is Ready again.
    _set_condition(cluster, "node", node, kind="Ready", status="True")
    wait_for_sync(lambda: _condition(pod(), "Ready") == "True", timeout=60, message="pod Ready again")
    assert pod()["metadata"]["uid"] == marked["metadata"]["uid"]  # the same pod, not a new one


def test_a_deleted_pod_goes_at_once_and_its_successor_of_the_same_name_stays(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    pool = node_pool(count=1)
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "again"},
        "spec": {"nodeSelector": pool.selector, "containers": [{"name": "main", "image": "example/a:1"}]},
    }

    def pod() -> dict[str, Any] | None:
        found = cluster.kubectl("get", "pod", "again", "-n", namespace, "-o", "json", check=False)
        return json.loads(found.stdout) if found.returncode == 0 else None

    cluster.apply(body, namespace=namespace)
    wait_for_sync(
        lambda: (p := pod()) is not None and _condition(p, "Ready") == "True", timeout=60, message="Ready"
    )
    first = pod()
    assert first is not None
    cluster.kubectl("delete", "pod", "again", "-n", namespace, "--wait=false")  # the default 30 s grace
    wait_for_sync(lambda: pod() is None, timeout=20, message="deleted pod gone at once, not after its grace")
    cluster.apply(body, namespace=namespace)
    wait_for_sync(
        lambda: (p := pod()) is not None and _condition(p, "Ready") == "True", timeout=60, message="Ready"
    )
    second = pod()
    assert second is not None and second["metadata"]["uid"] != first["metadata"]["uid"]
    assert not second["metadata"].get("deletionTimestamp")
