"""Workloads on the simulated cluster: DaemonSets on NFD-selected nodes, Jobs, validation pods, GC.

These are the behaviours the operator's recipes rely on, checked against the real
control plane with kwok standing in for the kubelets.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from support.cluster import Cluster
from support.waiting import wait_for_sync

pytestmark = pytest.mark.integration

NFD_NVIDIA = "feature.node.kubernetes.io/pci-10de.present"


def pods(cluster: Cluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", selector)[
        "items"
    ]
    return items


def is_ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", [])
    )


def bare_pod(name: str, *, node: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [{"name": "validate", "image": "example.com/validator:1"}],
        },
    }


def test_a_daemonset_with_an_nfd_selector_is_ready_on_exactly_the_matching_nodes(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    mark = {"sim.sro.dev/test": uuid.uuid4().hex[:10]}
    gpus = node_pool(count=3, pci=["10de"], labels=mark)
    others = node_pool(count=2, pci=["8086"], labels=mark)
    cluster.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "driver"},
            "spec": {
                "selector": {"matchLabels": {"app": "driver"}},
                "template": {
                    "metadata": {"labels": {"app": "driver"}},
                    "spec": {
                        "nodeSelector": {NFD_NVIDIA: "true", **mark},
                        "containers": [{"name": "driver", "image": "example.com/driver:1"}],
                    },
                },
            },
        },
        namespace=namespace,
    )

    def ready_nodes() -> set[str] | None:
        found = pods(cluster, namespace, "app=driver")
        ready = {p["spec"]["nodeName"] for p in found if is_ready(p)}
        return ready if len(ready) == len(gpus.nodes) else None

    ready = wait_for_sync(ready_nodes, timeout=60, message="driver pods Ready on every NVIDIA node")
    assert ready == set(gpus.nodes)
    assert not ready & set(others.nodes)
    assert len(pods(cluster, namespace, "app=driver")) == len(gpus.nodes)


def test_a_job_completes(cluster: Cluster, namespace: str, node_pool: Any) -> None:
    pool = node_pool(count=1)
    cluster.apply(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "once"},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "nodeSelector": pool.selector,
                        "containers": [{"name": "work", "image": "example.com/job:1"}],
                    }
                },
            },
        },
        namespace=namespace,
    )

    def complete() -> bool:
        job = cluster.kubectl_json("get", "job", "once", "-n", namespace)
        return any(
            c["type"] == "Complete" and c["status"] == "True" for c in job["status"].get("conditions", [])
        )

    wait_for_sync(complete, timeout=60, message="Job complete")
    assert cluster.kubectl_json("get", "job", "once", "-n", namespace)["status"]["succeeded"] == 1


def test_a_validation_pod_succeeds_on_a_healthy_node_and_fails_with_a_reason_on_a_broken_one(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    healthy = node_pool(count=1).nodes[0]
    broken = node_pool(count=1, broken=True).nodes[0]
    cluster.apply([bare_pod("ok", node=healthy), bare_pod("bad", node=broken)], namespace=namespace)

    def phase(name: str) -> str | None:
        p = cluster.kubectl_json("get", "pod", name, "-n", namespace)["status"].get("phase")
        return str(p) if p in ("Succeeded", "Failed") else None

    assert wait_for_sync(lambda: phase("ok"), timeout=60, message="validation pod finished") == "Succeeded"
    assert wait_for_sync(lambda: phase("bad"), timeout=60, message="validation pod finished") == "Failed"
    state = cluster.kubectl_json("get", "pod", "bad", "-n", namespace)["status"]["containerStatuses"][0][
        "state"
    ]
    assert state["terminated"]["exitCode"] == 1
    assert state["terminated"]["reason"] == "Error"


def test_a_pod_annotated_to_fail_fails_with_its_exit_code_and_message(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    node = node_pool(count=1).nodes[0]
    annotations = {
        "sim.sro.dev/fail": "true",
        "sim.sro.dev/exit-code": "3",
        "sim.sro.dev/fail-message": "no GPU",
    }
    cluster.apply(bare_pod("bad", node=node, annotations=annotations), namespace=namespace)

    def terminated() -> dict[str, Any] | None:
        pod = cluster.kubectl_json("get", "pod", "bad", "-n", namespace)
        if pod["status"].get("phase") != "Failed":
            return None
        result: dict[str, Any] = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        return result

    state = wait_for_sync(terminated, timeout=60, message="pod Failed")
    assert (state["exitCode"], state["message"]) == (3, "no GPU")


def test_deleting_an_owner_cascades_through_garbage_collection(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    pool = node_pool(count=2)
    cluster.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "nodeSelector": pool.selector,
                        "containers": [{"name": "web", "image": "example.com/web:1"}],
                    },
                },
            },
        },
        namespace=namespace,
    )
    wait_for_sync(
        lambda: len([p for p in pods(cluster, namespace, "app=web") if is_ready(p)]) == 2,
        timeout=60,
        message="two Ready pods of the Deployment",
    )
    assert cluster.kubectl_json("get", "replicasets", "-n", namespace, "-l", "app=web")["items"]

    cluster.kubectl("delete", "deployment", "web", "-n", namespace, "--cascade=background")

    def gone() -> bool:
        rs = cluster.kubectl_json("get", "replicasets", "-n", namespace, "-l", "app=web")["items"]
        return not rs and not pods(cluster, namespace, "app=web")

    wait_for_sync(gone, timeout=60, message="ReplicaSet and pods garbage-collected")
