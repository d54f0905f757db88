"""Simulated devices: a device-plugin pod brings its node's devices into capacity and takes them away.

Also checks the admission plugin the operator's taints depend on: a pod requesting an
extended resource gets a toleration for the same-named taint (ExtendedResourceToleration).
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from simcluster import audit, pki
from support.cluster import Cluster
from support.waiting import wait_for_sync

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}


def capacity(cluster: Cluster, node: str) -> dict[str, str]:
    result: dict[str, str] = cluster.kubectl_json("get", "node", node)["status"].get("capacity", {})
    return result


def test_a_device_plugin_pod_brings_gpus_and_a_gpu_pod_lands_on_the_tainted_node(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    pool = node_pool(count=1, devices={GPU: 8}, taints=[TAINT])
    node = pool.nodes[0]
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
    assert GPU not in capacity(cluster, node), "devices must not be in capacity before a plugin runs"

    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "device-plugin"},
            "spec": {
                "nodeSelector": pool.selector,
                "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [
                    {
                        "name": "plugin",
                        "image": "example.com/device-plugin:1",
                        "volumeMounts": [{"name": "dp", "mountPath": "/var/lib/kubelet/device-plugins"}],
                    }
                ],
                "volumes": [{"name": "dp", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}],
            },
        },
        namespace=namespace,
    )
    wait_for_sync(lambda: capacity(cluster, node).get(GPU) == "8", timeout=60, message=f"{GPU} in capacity")
    allocatable = cluster.kubectl_json("get", "node", node)["status"]["allocatable"]
    assert allocatable[GPU] == "8"
    # devsim writes as its own user, as a kubelet does, never as the harness's admin
    devsim_user, _ = pki.CLIENTS["devsim"]
    admin_user, _ = pki.CLIENTS["admin"]

    def status_writers() -> set[str] | None:
        """Who patched the node's status since the start, once devsim's patch is logged."""
        writes = audit.matching(
            audit.since(audit.read(cluster.audit_log), start),
            verb="patch",
            resource="nodes",
            subresource="status",
            name=node,
        )
        users = {w.user for w in writes}
        return users if devsim_user in users else None

    writers = wait_for_sync(
        status_writers,
        timeout=30,
        message="devsim's patch of the node's capacity in the audit log",
    )
    assert admin_user not in writers

    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "cuda"},
            "spec": {
                "nodeSelector": pool.selector,
                "containers": [
                    {"name": "cuda", "image": "example.com/cuda:1", "resources": {"limits": {GPU: "1"}}}
                ],
            },
        },
        namespace=namespace,
    )

    def bound() -> str | None:
        node_name = cluster.kubectl_json("get", "pod", "cuda", "-n", namespace)["spec"].get("nodeName")
        return str(node_name) if node_name else None

    assert wait_for_sync(bound, timeout=60, message="GPU pod scheduled") == node
    tolerations = cluster.kubectl_json("get", "pod", "cuda", "-n", namespace)["spec"]["tolerations"]
    assert {"key": GPU, "operator": "Exists", "effect": "NoSchedule"} in tolerations

    cluster.kubectl("delete", "pod", "device-plugin", "-n", namespace)
    wait_for_sync(lambda: GPU not in capacity(cluster, node), timeout=60, message=f"{GPU} gone from capacity")
    assert GPU not in cluster.kubectl_json("get", "node", node)["status"]["allocatable"]


def test_a_pod_without_the_device_plugin_volume_brings_no_devices(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    pool = node_pool(count=1, devices={GPU: 4})
    node = pool.nodes[0]
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "plain"},
            "spec": {
                "nodeSelector": pool.selector,
                "containers": [{"name": "c", "image": "example.com/plain:1"}],
            },
        },
        namespace=namespace,
    )
    wait_for_sync(
        lambda: (
            cluster.kubectl_json("get", "pod", "plain", "-n", namespace)["status"].get("phase") == "Running"
        ),
        timeout=60,
        message="plain pod Running",
    )
    assert GPU not in capacity(cluster, node)
    # A device plugin on the same node afterwards shows the simulator is live for this node.
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "plugin"},
            "spec": {
                "nodeSelector": pool.selector,
                "containers": [{"name": "plugin", "image": "example.com/device-plugin:1"}],
                "volumes": [{"name": "dp", "hostPath": {"path": "/var/lib/kubelet/device-plugins/"}}],
            },
        },
        namespace=namespace,
    )
    wait_for_sync(lambda: capacity(cluster, node).get(GPU) == "4", timeout=60, message=f"{GPU} in capacity")
