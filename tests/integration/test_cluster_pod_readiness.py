"""A pod the node controller marked not Ready gets Ready back once its node reports.

On real nodes the kubelet does this on its next status sync; the simulator must too, or
a node whose heartbeats lagged once keeps its pods not Ready for good (as 5,000 kwok
nodes on two cores did).
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
