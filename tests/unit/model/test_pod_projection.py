"""What sro reads of a Pod (``views.PodView.from_body``): readiness above all."""

from __future__ import annotations

from typing import Any

import pytest

from sro.model import views

pytestmark = pytest.mark.unit


def pod(*, ready: str, containers_ready: str, phase: str = "Running", gates: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": "n1", "containers": [{"name": "driver"}]}
    if gates:
        spec["readinessGates"] = [{"conditionType": "example.com/loaded"}]
    return {
        "metadata": {"name": "driver-n1", "namespace": "gpu", "uid": "u1"},
        "spec": spec,
        "status": {
            "phase": phase,
            "conditions": [
                {"type": "Ready", "status": ready},
                {"type": "ContainersReady", "status": containers_ready},
                "not a condition",
            ],
            "containerStatuses": [{"name": "driver", "ready": containers_ready == "True"}],
        },
    }


def test_a_ready_pod_is_ready() -> None:
    view = views.PodView.from_body(pod(ready="True", containers_ready="True"))
    assert view.ready and not view.ready_withdrawn


def test_ready_withdrawn_while_the_containers_stay_ready_is_the_node_controllers_mark() -> None:
    view = views.PodView.from_body(pod(ready="False", containers_ready="True"))
    assert not view.ready and view.ready_withdrawn


@pytest.mark.parametrize(
    "body",
    [
        pod(ready="False", containers_ready="False"),  # the kubelet says its containers are not ready
        pod(ready="False", containers_ready="True", gates=True),  # a readiness gate holds it back
        pod(ready="False", containers_ready="True", phase="Pending"),
    ],
)
def test_anything_else_not_ready_is_not_ready(body: dict[str, Any]) -> None:
    view = views.PodView.from_body(body)
    assert not view.ready and not view.ready_withdrawn
