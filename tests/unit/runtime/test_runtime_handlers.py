"""Event handlers: which keys a primary, an owned object and a Node change enqueue."""

from dataclasses import dataclass, field, replace

import pytest

from sro import errors
from sro.cache import projections, store
from sro.model import desired, specialresource, views
from sro.plan import live_records, readiness
from sro.runtime import handlers

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class Node:
    """Stands in for NodeView: a name, labels and the relevant() tuple."""

    name: str
    labels: dict = field(default_factory=dict)
    heartbeat: str = ""

    def relevant(self) -> tuple:
        return tuple(sorted(self.labels.items()))


def obj(name: str, owner: str = "", ns: str = "") -> projections.ObjectView:
    labels = {specialresource.OWNER_LABEL: owner} if owner else {}
    return projections.ObjectView.from_body(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
        }
    )


def test_a_primary_change_enqueues_its_own_name() -> None:
    keys: list[str] = []
    handlers.primary(keys.append)(store.Change(None, obj("gpu")))
    handlers.primary(keys.append)(store.Change(obj("nic"), None))
    assert keys == ["gpu", "nic"]


def test_a_namespaced_primary_is_keyed_by_namespace_and_name() -> None:
    keys: list[str] = []
    handlers.primary(keys.append)(store.Change(None, obj("a", ns="ops")))
    assert keys == ["ops/a"]


def test_an_owned_change_enqueues_its_owner() -> None:
    keys: list[str] = []
    handlers.owned(keys.append)(store.Change(None, obj("ds", owner="gpu")))
    assert keys == ["gpu"]


def test_an_owned_object_of_a_namespaced_primary_enqueues_namespace_and_owner() -> None:
    keys: list[str] = []
    handlers.owned(keys.append, namespaced_owner=True)(store.Change(None, obj("s", owner="cm", ns="ops")))
    assert keys == ["ops/cm"]


def test_an_object_moving_between_owners_enqueues_both() -> None:
    keys: list[str] = []
    handlers.owned(keys.append)(store.Change(obj("ds", owner="a"), obj("ds", owner="b")))
    assert keys == ["a", "b"]


def test_an_unowned_object_enqueues_nothing() -> None:
    keys: list[str] = []
    handlers.owned(keys.append)(store.Change(None, obj("x")))
    assert keys == []


def test_a_heartbeat_enqueues_nothing() -> None:
    keys: list[str] = []
    calls = 0

    def mapper(old: object, new: object) -> set[str]:
        nonlocal calls
        calls += 1
        return {"gpu"}

    handle = handlers.nodes(keys.append, mapper)  # type: ignore[arg-type]
    handle(store.Change(Node("n", {"a": "1"}, heartbeat="t1"), Node("n", {"a": "1"}, heartbeat="t2")))
    assert keys == [] and calls == 0


def test_a_relevant_node_change_enqueues_what_the_mapper_says_for_old_and_new() -> None:
    keys: list[str] = []
    seen: list[tuple[object, object]] = []

    def mapper(old: object, new: object) -> set[str]:
        seen.append((old, new))
        return {"b", "a"}

    handle = handlers.nodes(keys.append, mapper)  # type: ignore[arg-type]
    old, new = Node("n", {"gpu": "1"}), Node("n", {})
    handle(store.Change(old, new))
    assert keys == ["a", "b"] and seen == [(old, new)]


def test_node_creation_and_deletion_always_reach_the_mapper() -> None:
    keys: list[str] = []
    handle = handlers.nodes(keys.append, lambda old, new: {"x"})  # type: ignore[arg-type]
    handle(store.Change(None, Node("n")))
    handle(store.Change(Node("n"), None))
    assert keys == ["x", "x"]


def test_a_mapped_change_enqueues_each_key_the_mapper_names_once_in_order() -> None:
    keys: list[str] = []
    seen: list[tuple[str | None, str | None]] = []

    def mapper(old: object, new: object) -> set[str]:
        seen.append((getattr(old, "name", None), getattr(new, "name", None)))
        return {"b", "a"}

    handlers.mapped(keys.append, mapper)(store.Change(obj("cm"), None))
    assert keys == ["a", "b"]
    assert seen == [("cm", None)]


def _sr(*, status: dict | None = None, version: str = "1", **meta: object) -> projections.ObjectView:
    body = {
        "apiVersion": "sro.dev/v1alpha1",
        "kind": "SpecialResource",
        "metadata": {"name": "gpu", "resourceVersion": version, **meta},
        "spec": {"recipe": "nvidia-gpu"},
    }
    if status is not None:
        body["status"] = status
    return projections.ObjectView.from_body(body)


def test_a_change_of_the_primary_status_alone_enqueues_nothing() -> None:
    keys: list[str] = []
    handle = handlers.primary(keys.append)
    handle(store.Change(_sr(version="1"), _sr(status={"state": "Ready"}, version="2")))
    assert keys == []
    handle(store.Change(_sr(version="2"), _sr(version="3", labels={"team": "a"})))
    handle(store.Change(_sr(version="3"), _sr(version="4", finalizers=["sro.dev/cleanup"])))
    handle(store.Change(_sr(version="4"), _sr(version="5", deletionTimestamp="2026-11-25T00:00:00Z")))
    assert keys == ["gpu", "gpu", "gpu"]


def test_a_status_someone_else_wrote_enqueues_the_primary() -> None:
    keys: list[str] = []
    mine = {"state": "Ready"}
    handle = handlers.primary(keys.append, own_status=lambda view: dict(view.status) == mine)
    handle(store.Change(_sr(version="1"), _sr(status=mine, version="2")))
    assert keys == [], "this process's own status write coming back"
    handle(store.Change(_sr(status=mine, version="2"), _sr(status={"state": "Progressing"}, version="3")))
    assert keys == ["gpu"], "a stale or hand-written status is written back by a reconcile"


def _pod(*, version: str, ready: bool, phase: str = "Running") -> views.PodView:
    return views.PodView(
        namespace="gpu",
        name="validate-n1",
        uid="u1",
        node="n1",
        phase=phase,
        ready=ready,
        labels={specialresource.OWNER_LABEL: "gpu"},
        resource_version=version,
    )


def test_a_pod_change_the_projection_does_not_show_enqueues_nothing() -> None:
    keys: list[str] = []
    handle = handlers.owned(keys.append)
    handle(store.Change(_pod(version="1", ready=False), _pod(version="2", ready=False)))
    assert keys == []
    handle(store.Change(_pod(version="2", ready=False), _pod(version="3", ready=True)))
    handle(store.Change(_pod(version="3", ready=True), _pod(version="4", ready=True, phase="Succeeded")))
    handle(store.Change(_pod(version="4", ready=True), None))
    assert keys == ["gpu", "gpu", "gpu"]


def test_a_ready_the_node_controller_took_or_gave_back_enqueues_nothing() -> None:
    keys: list[str] = []
    handle = handlers.owned(keys.append)
    ready = _pod(version="1", ready=True)
    withdrawn = replace(_pod(version="2", ready=False), ready_withdrawn=True)
    handle(store.Change(ready, withdrawn))  # the node's heartbeats lapsed
    handle(store.Change(withdrawn, _pod(version="3", ready=True)))  # and came back
    assert keys == []
    handle(store.Change(_pod(version="3", ready=True), _pod(version="4", ready=False)))  # the kubelet's own
    assert keys == ["gpu"]


def _daemonset(*, ready: int, image: str = "d:1") -> projections.ObjectView:
    return projections.ObjectView.from_body(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {
                "name": "driver",
                "namespace": "gpu",
                "labels": {specialresource.OWNER_LABEL: "gpu"},
                "resourceVersion": str(ready),
                "generation": 1 if image == "d:1" else 2,
            },
            "spec": {"template": {"spec": {"containers": [{"image": image}]}}},
            "status": {"numberReady": ready, "desiredNumberScheduled": 5000},
        }
    )


def test_a_status_change_alone_of_a_kind_whose_status_is_not_read_enqueues_nothing() -> None:
    """A DaemonSet's counts move with each pod on each node; its pods are what is judged."""
    keys: list[str] = []
    quiet = handlers.owned(keys.append, status_read=False)
    quiet(store.Change(_daemonset(ready=4999), _daemonset(ready=5000)))
    assert keys == []
    quiet(store.Change(_daemonset(ready=5000), _daemonset(ready=5000, image="d:2")))  # a hand edit
    quiet(store.Change(_daemonset(ready=5000), None))  # deleted
    assert keys == ["gpu", "gpu"]
    handlers.owned(keys.append)(store.Change(_daemonset(ready=4999), _daemonset(ready=5000)))
    assert keys == ["gpu", "gpu", "gpu"]  # a kind whose status is read: enqueued


def test_the_kinds_whose_status_is_not_read_have_verdicts_that_ignore_it() -> None:
    """``readiness.reads_status`` is what the owned watches are told: a kind it leaves out
    must judge the same with any status."""

    statuses = [
        {},
        {"phase": "Terminating", "observedGeneration": 0, "availableReplicas": 0, "readyReplicas": 0},
        {"conditions": [{"type": "Failed", "status": "True"}, {"type": "Established", "status": "False"}]},
    ]
    for kind in ("DaemonSet", "ConfigMap", "Service", "ServiceAccount", "ClusterRole", "PriorityClass"):
        assert not readiness.reads_status(kind)
        want = desired.DesiredObject(
            state="s",
            body={"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}},
            source=errors.Location(file="x.yaml"),
        )
        verdicts = {
            readiness.cluster_object(
                want,
                live_records.LiveObject.from_body(
                    {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}, "status": st}
                ),
            ).outcome
            for st in statuses
        }
        assert len(verdicts) == 1, (kind, verdicts)
    for kind in ("Job", "Deployment", "Namespace", "Pod"):
        assert readiness.reads_status(kind)
