"""What sro reads of a Pod (``views.PodView.from_body``): readiness above all."""

from __future__ import annotations

import dataclasses
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


def test_judged_counts_a_withdrawn_ready_as_ready_and_ignores_the_version() -> None:
    ready = views.PodView.from_body(pod(ready="True", containers_ready="True"))
    withdrawn = views.PodView.from_body(pod(ready="False", containers_ready="True"))
    down = views.PodView.from_body(pod(ready="False", containers_ready="False"))
    assert withdrawn.judged() == ready.judged()
    assert down.judged() != ready.judged()
    assert dataclasses.replace(ready, resource_version="9").judged() == ready.judged()


_NOT_AS_IS = ("ready", "ready_withdrawn", "resource_version")
_JUDGED_AS_IS = [f for f in dataclasses.fields(views.PodView) if f.name not in _NOT_AS_IS]


@pytest.mark.parametrize("field", _JUDGED_AS_IS, ids=lambda f: f.name)
def test_judged_sees_every_other_field(field: dataclasses.Field[Any]) -> None:
    base = views.PodView.from_body(pod(ready="True", containers_ready="True"))
    value = getattr(base, field.name)
    if isinstance(value, bool):
        other: Any = not value
    elif isinstance(value, str):
        other = value + "-changed"
    elif isinstance(value, tuple):
        other = (*value, views.ContainerState(name="extra"))
    else:
        other = {**value, "changed": "yes"}
    assert dataclasses.replace(base, **{field.name: other}).judged() != base.judged()


def labelled(labels: Any, *, name: str = "driver-n1", exit_code: Any = None) -> dict[str, Any]:
    body = pod(ready="True", containers_ready="True")
    body["metadata"] = {**body["metadata"], "name": name, "labels": labels}
    if exit_code is not None:
        body["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": exit_code}}
    return body


def test_pods_with_the_same_labels_and_container_states_hold_one_copy_of_them() -> None:
    labels = {"app": "driver", "pod-template-generation": "1", "sro.dev/owner": "gpu"}
    one = views.PodView.from_body(labelled(dict(labels), name="driver-a"))
    two = views.PodView.from_body(labelled(dict(labels), name="driver-b"))
    other = views.PodView.from_body(labelled({**labels, "pod-template-generation": "2"}, name="driver-c"))
    assert one.labels is two.labels and one.containers is two.containers
    assert dict(one.labels) == labels and one.name != two.name
    assert other.labels is not one.labels and other.template_generation == "2"


def test_labels_or_exit_codes_that_cannot_be_shared_still_make_a_view() -> None:
    odd = views.PodView.from_body(labelled({"app": ["not", "a", "string"]}, exit_code={"code": 1}))
    assert odd.labels == {"app": "['not', 'a', 'string']"}
    assert odd.containers[0].exit_code == {"code": 1}


def test_a_flood_of_distinct_label_sets_is_kept_to_a_bounded_number() -> None:
    for i in range(views.KEPT + 10):
        view = views.PodView.from_body(labelled({"app": f"flood-{i}"}, name=f"p{i}"))
        assert view.labels == {"app": f"flood-{i}"}
    assert views._one_labels.cache_info().currsize <= views.KEPT
