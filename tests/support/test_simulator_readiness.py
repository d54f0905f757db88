"""devsim puts back the readiness a node controller took (hack/lib/simcluster/pod_readiness.py)."""

from __future__ import annotations

from typing import Any

import pytest
from simcluster import pod_deletion, pod_readiness

pytestmark = pytest.mark.unit


def _pod(
    *, ready: str, containers: str = "True", phase: str = "Running", deleting: bool = False
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "uid": "u1"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {"nodeName": "n1"},
        "status": {
            "phase": phase,
            "conditions": [
                {"type": "Ready", "status": ready},
                {"type": "ContainersReady", "status": containers},
            ],
        },
    }


def _node(ready: str) -> dict[str, Any]:
    return {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": ready}]}}


def test_only_a_running_pod_with_ready_containers_is_taken_as_marked() -> None:
    assert pod_readiness.marked_not_ready(_pod(ready="False"))
    assert not pod_readiness.marked_not_ready(_pod(ready="True"))
    assert not pod_readiness.marked_not_ready(_pod(ready="False", containers="False"))  # a crash stays
    assert not pod_readiness.marked_not_ready(_pod(ready="False", phase="Pending"))
    assert not pod_readiness.marked_not_ready(_pod(ready="False", deleting=True))


def test_a_marked_pod_is_restored_once_its_node_reports() -> None:
    restorer = pod_readiness.Restorer(client=None)  # type: ignore[arg-type]  # no request is sent here
    restorer.on_pod("MODIFIED", _pod(ready="False"), node=_node("Unknown"))
    assert restorer.queue.empty()  # the node is still silent: a kubelet would not have spoken
    restorer.on_node(_node("Unknown"))
    assert restorer.queue.empty()
    restorer.on_node(_node("True"))
    assert restorer.queue.get_nowait() == ("ns", "p", "u1")
    restorer.on_pod("MODIFIED", _pod(ready="True"), node=_node("True"))
    restorer.on_node(_node("True"))
    assert restorer.queue.empty()  # Ready again: forgotten


def test_a_pod_marked_on_a_node_that_reports_is_restored_at_once() -> None:
    restorer = pod_readiness.Restorer(client=None)  # type: ignore[arg-type]
    restorer.on_pod("MODIFIED", _pod(ready="False"), node=_node("True"))
    assert restorer.queue.get_nowait() == ("ns", "p", "u1")
    restorer.on_pod("DELETED", _pod(ready="False"), node=_node("True"))
    restorer.on_node(_node("True"))
    assert restorer.queue.empty()


def test_a_pod_being_deleted_is_deleted_by_its_uid_once() -> None:
    finisher = pod_deletion.Finisher(client=None)  # type: ignore[arg-type]  # no request is sent here
    pod = _pod(ready="True", deleting=True)
    finisher.on_pod("MODIFIED", pod)
    finisher.on_pod("MODIFIED", pod)  # seen again before the worker got to it: still once
    assert finisher.queue.get_nowait() == ("ns", "p", "u1")
    assert finisher.queue.empty()
    finisher.on_pod("MODIFIED", _pod(ready="True"))  # not being deleted
    unscheduled = _pod(ready="False", deleting=True)
    unscheduled["spec"] = {}
    finisher.on_pod("MODIFIED", unscheduled)
    assert finisher.queue.empty()
    assert pod_deletion.options("u1")["preconditions"] == {"uid": "u1"}
