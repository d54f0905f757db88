"""The plan as the engine will execute it: apply order, deletions, retries with backoff,
resets after a replaced workload, wait-for-logs, kernel changes, departed nodes, teardown,
and that an unchanged world plans nothing new.

Driven through ``World`` (builders), an in-memory stand-in for the cluster between
reconciles; readiness and walking details have their own tests.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from builders import (
    K1,
    K2,
    NS,
    SR,
    T0,
    World,
    bare_pod,
    container,
    ds,
    ds_pod,
    failed_pod,
    label,
    labels_of,
    live,
    node,
    node_pods,
    obj,
    replica_pod,
    seen,
    states,
    wanted,
)

from sro.model import desired, views
from sro.plan import actions, lifecycle, log_polls, observed, planner, pod_retries, walk
from sro.status import events, summary

pytestmark = pytest.mark.unit

NODES = ("n1", "n2", "n3")
LINEAR = states("state-driver", "state-validation", "state-device-plugin")


def gpu_objects(nodes: tuple[str, ...] = NODES, *, driver: list[desired.DesiredObject] | None = None) -> list:
    return [
        *(driver or [ds("driver", "state-driver")]),
        *node_pods("validate", "state-validation", nodes),
        ds("plugin", "state-device-plugin"),
    ]


def linear_world(**kw: Any) -> World:
    return World(desired=wanted(LINEAR, gpu_objects(), NODES), nodes={n: node(n) for n in NODES}, **kw)


def test_objects_are_applied_namespace_first_then_crds_rbac_config_and_workloads_last() -> None:
    objects = [
        ds("driver", "state-driver"),
        obj("ConfigMap", "cfg", "state-driver"),
        obj("RoleBinding", "rb", "state-driver", api_version="rbac.authorization.k8s.io/v1"),
        obj("ServiceAccount", "sa", "state-driver"),
        obj("CustomResourceDefinition", "x.example.com", "state-driver", namespace=""),
        obj("Namespace", NS, "state-driver", namespace=""),
        obj("ServiceMonitor", "mon", "state-driver", api_version="monitoring.coreos.com/v1"),
    ]
    p = planner.plan(wanted(states("state-driver"), objects, ["n1"]), seen([node("n1")]), now=T0)
    kinds = [o.kind for o in p.apply]
    expected = [
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "RoleBinding",
        "ConfigMap",
        "ServiceMonitor",
        "DaemonSet",
    ]
    assert kinds == expected


def test_a_failed_validation_pod_fails_that_node_only_and_is_recreated_after_backoff() -> None:
    world = linear_world(pod_outcome={"validate-n2": "Failed"})
    world.settle()
    p = world.last
    assert p is not None and p.walk is not None
    assert p.walk.nodes["n2"]["state-validation"].phase.value == "Failed"
    assert {str(k): v for k, v in p.walk.phase_counts("state-validation").items()} == {
        "Complete": 2,
        "Failed": 1,
    }
    assert {str(k): v for k, v in p.walk.phase_counts("state-device-plugin").items()} == {
        "Complete": 2,
        "Pending": 1,
    }
    assert world.complete_states("n1") == {"state-driver", "state-validation", "state-device-plugin"}
    assert world.complete_states("n2") == {"state-driver"}
    assert p.status["state"] == "Degraded: StateFailed on 1 node (n2: Error (exit code 1))"
    assert p.requeue_after == 10.0
    assert p.retries[obj("Pod", "validate-n2", "s").ref].attempts == 1
    assert not p.delete and "validate-n2" not in {o.ref.name for o in p.apply}

    world.later(4)
    assert world.step().requeue_after == 6.0
    world.later(6)
    world.pod_outcome["validate-n2"] = "Succeeded"
    failed_uid = world.pods[(NS, "validate-n2")].uid
    due = world.step()
    assert [(d.ref.name, d.uid) for d in due.delete] == [("validate-n2", failed_uid)]
    world.settle()
    assert world.complete_states("n2") == {"state-driver", "state-validation", "state-device-plugin"}
    assert world.status["state"] == "Ready: 3/3 nodes"
    assert world.retries == {}


def test_a_failed_pod_stays_degraded_while_backing_off_and_while_its_replacement_runs() -> None:
    world = linear_world(pod_outcome={"validate-n2": "Failed"})
    world.settle()
    failed = world.status
    world.later(10)
    world.pod_outcome["validate-n2"] = "Running"
    deleted = world.step()  # the failed pod goes
    assert [d.ref.name for d in deleted.delete] == ["validate-n2"]
    for _ in range(2):  # the pod is gone, then its replacement runs
        p = world.step()
        row = next(r for r in p.status["states"] if r["name"] == "state-validation")
        assert p.status["phase"] == "Degraded"
        assert row["failingNodes"] == [{"node": "n2", "reason": "Error (exit code 1)"}]
        assert {c["type"]: c["status"] for c in p.status["conditions"]}["Progressing"] == "False"
        assert p.status == failed and not p.events
    world.pods[(NS, "validate-n2")] = replace(world.pods[(NS, "validate-n2")], phase="Succeeded")
    world.settle()
    assert world.status["state"] == "Ready: 3/3 nodes"


def test_the_backoff_doubles_with_each_failure_of_the_same_pod() -> None:
    world = linear_world(pod_outcome={"validate-n1": "Failed"})
    world.settle()
    world.later(10)
    world.step()  # deletes the failed pod
    world.step()  # recreates it; it fails again
    world.step()
    assert world.last is not None
    assert world.last.retries[obj("Pod", "validate-n1", "s").ref].attempts == 2
    assert world.last.requeue_after == 20.0
    assert [pod_retries.backoff(n).total_seconds() for n in (1, 2, 3, 9, 100)] == [10, 20, 40, 300, 300]


def test_an_image_pull_backoff_is_named_in_the_progressing_state() -> None:
    d = ds("driver", "state-driver")
    stuck = ds_pod(d, "n2", ready=False, containers=(container(waiting_reason="ImagePullBackOff"),))
    want = wanted(states("state-driver"), [d], ["n1", "n2"])
    view = seen([node("n1"), node("n2")], objects=[live(d)], pods=[ds_pod(d, "n1"), stuck])
    p = planner.plan(want, view, now=T0)
    row = p.status["states"][0]
    assert p.status["state"] == "Progressing: state-driver 1/2 nodes"
    assert row["phase"] == "Progressing"
    assert row["message"] == f"n2: ImagePullBackOff (pod {stuck.name})"


def test_a_replaced_driver_pod_resets_the_later_states_on_that_node_only() -> None:
    world = linear_world()
    world.settle()
    others = {n: dict(world.nodes[n].labels) for n in ("n2", "n3")}
    key = (NS, "driver-n1")
    world.pods[key] = replace(world.pods[key], uid="replacement", ready=False, containers=())

    p = world.step()
    assert labels_of(p) == {
        "n1": {
            label("state-driver"): None,
            label("state-validation"): None,
            label("state-device-plugin"): None,
            lifecycle.complete_label(SR): None,
        }
    }
    assert [(d.ref.name, d.reason) for d in p.delete] == [
        (
            "validate-n1",
            "state-validation is not open on n1 (state-driver is Progressing: pod driver-n1 not ready): "
            "its pod runs again when it opens",
        )
    ]
    assert p.status["state"] == "Progressing: state-driver 2/3 nodes"

    world.pods[key] = replace(world.pods[key], ready=True)
    world.settle()
    assert world.created.count(obj("Pod", "validate-n1", "s").ref) == 2  # the validation ran again
    assert world.complete_states("n1") == {"state-driver", "state-validation", "state-device-plugin"}
    assert {n: dict(world.nodes[n].labels) for n in ("n2", "n3")} == others


def test_a_driver_pod_whose_ready_the_node_controller_withdrew_resets_nothing() -> None:
    # The node's kubelet stopped reporting: Ready is set False on its pods, their
    # containers still report ready. Nothing on the node is deleted or relabelled, and
    # the validation does not run again when the kubelet reports and Ready comes back.
    world = linear_world()
    world.settle()
    labelled = dict(world.nodes["n1"].labels)
    key = (NS, "driver-n1")
    world.pods[key] = replace(world.pods[key], ready=False, ready_withdrawn=True)

    p = world.step()
    assert labels_of(p) == {}
    assert p.delete == ()
    assert world.complete_states("n1") == {"state-driver", "state-validation", "state-device-plugin"}

    world.pods[key] = replace(world.pods[key], ready=True, ready_withdrawn=False)
    world.settle()
    assert world.created.count(obj("Pod", "validate-n1", "s").ref) == 1
    assert dict(world.nodes["n1"].labels) == labelled


def test_a_dashboard_pod_whose_ready_the_node_controller_withdrew_relabels_no_node() -> None:
    # The one pod of a cluster-wide Deployment runs on a node whose kubelet stopped
    # reporting: the Deployment's status counts it unavailable. Taking the state's label
    # (and ``complete``) off every node for it would be a write per node for nothing.
    dashboard = obj("Deployment", "grafana", "state-grafana")
    world = World(
        desired=wanted(
            states("state-driver", "state-grafana"), [ds("driver", "state-driver"), dashboard], NODES
        ),
        nodes={n: node(n) for n in NODES},
    )
    world.settle()
    labelled = {n: dict(world.nodes[n].labels) for n in NODES}
    assert all(labels[label("complete")] == "true" for labels in labelled.values())
    blinked = live(dashboard, observed_generation=1, available_replicas=0, ready_replicas=0)
    world.objects[dashboard.ref] = blinked
    key = (NS, "grafana-n2")
    world.workload_pods[key] = replica_pod(dashboard, "n2", ready=False, ready_withdrawn=True)

    p = world.step()
    assert labels_of(p) == {} and p.delete == ()
    assert {n: dict(world.nodes[n].labels) for n in NODES} == labelled

    # The kubelet says the pod's containers are down: that is the dashboard down.
    world.workload_pods[key] = replica_pod(dashboard, "n2", ready=False)
    p = world.step()
    assert labels_of(p) == {n: {label("state-grafana"): None, label("complete"): None} for n in NODES}


def _collected(world: World, name: str) -> None:
    """What the pod garbage collector does to a finished pod."""
    ref = obj("Pod", name, "s").ref
    world.pods.pop((ref.namespace, ref.name))
    world.objects.pop(ref, None)


def test_a_validation_pod_collected_after_it_succeeded_resets_nothing_and_is_not_made_again() -> None:
    world = linear_world()
    world.settle()
    labelled = {n: dict(world.nodes[n].labels) for n in NODES}
    made = len(world.created)
    _collected(world, "validate-n1")

    p = world.step()
    assert labels_of(p) == {} and p.delete == ()
    assert [o.ref.name for o in p.apply if o.kind == "Pod"] == []
    world.settle()
    assert len(world.created) == made
    assert world.complete_states("n1") == {"state-driver", "state-validation", "state-device-plugin"}
    assert {n: dict(world.nodes[n].labels) for n in NODES} == labelled


def test_a_validation_pod_that_succeeded_and_went_between_two_passes_counts_and_is_not_made_again() -> None:
    # The pod garbage collector may take a finished pod before any pass saw it succeed:
    # the cache's log of pods gone after they succeeded (Observed.finished) proves it ran.
    world = linear_world(pod_outcome={"validate-n1": "Running"})
    world.settle()
    assert world.complete_states("n1") == {"state-driver"}
    ref = obj("Pod", "validate-n1", "s").ref
    _collected(world, "validate-n1")
    world.finished = frozenset({ref})

    p = world.step()
    assert labels_of(p)["n1"][label("state-validation")] == "ready"
    assert [o.ref.name for o in p.apply if o.kind == "Pod"] == []
    world.finished = frozenset()
    world.settle()
    assert world.created.count(ref) == 1
    assert world.complete_states("n1") == {"state-driver", "state-validation", "state-device-plugin"}


def test_a_pod_that_succeeded_and_went_is_not_made_again_while_its_state_still_waits() -> None:
    # Two per-node pods in one state: one ran and went, the other still runs.
    objects = [
        ds("driver", "state-driver"),
        *node_pods("validate", "state-validation", NODES),
        *node_pods("burn-in", "state-validation", NODES),
        ds("plugin", "state-device-plugin"),
    ]
    world = World(
        desired=wanted(LINEAR, objects, NODES),
        nodes={n: node(n) for n in NODES},
        pod_outcome={"validate-n1": "Running", "burn-in-n1": "Running"},
    )
    world.settle()
    ref = obj("Pod", "validate-n1", "s").ref
    _collected(world, "validate-n1")
    world.finished = frozenset({ref})
    p = world.step()
    assert [o.ref.name for o in p.apply if o.kind == "Pod"] == []
    assert world.complete_states("n1") == {"state-driver"}


def test_a_pod_gone_unseen_and_not_logged_as_succeeded_runs_again() -> None:
    world = linear_world(pod_outcome={"validate-n1": "Running"})
    world.settle()
    ref = obj("Pod", "validate-n1", "s").ref
    _collected(world, "validate-n1")
    p = world.step()
    assert label("state-validation") not in labels_of(p).get("n1", {})
    assert [o.ref.name for o in p.apply if o.kind == "Pod"] == ["validate-n1"]
    assert world.created.count(ref) == 2


def test_a_succeeded_validation_pod_being_deleted_by_someone_else_resets_nothing() -> None:
    # A graceful delete is seen first as a deletion timestamp, then the pod goes.
    world = linear_world()
    world.settle()
    labelled = {n: dict(world.nodes[n].labels) for n in NODES}
    made = len(world.created)
    key = (NS, "validate-n1")
    world.pods[key] = replace(world.pods[key], deleting=True)

    p = world.step()
    assert labels_of(p) == {} and p.delete == ()
    assert [o.ref.name for o in p.apply if o.kind == "Pod"] == []
    _collected(world, "validate-n1")
    world.settle()
    assert len(world.created) == made
    assert {n: dict(world.nodes[n].labels) for n in NODES} == labelled


def test_a_running_pod_being_deleted_is_no_success() -> None:
    # Only a pod that succeeded counts once it is going: one deleted while it runs never
    # finished, and the label does not make it so.
    world = linear_world()
    world.settle()
    key = (NS, "validate-n1")
    world.pods[key] = replace(world.pods[key], phase="Running", deleting=True)
    p = world.step()
    assert labels_of(p)["n1"][label("state-validation")] is None


def test_a_cluster_wide_pod_collected_after_it_succeeded_resets_no_node_and_is_not_made_again() -> None:
    # A pod that runs once for the cluster: every node's later states hang on it.
    objects = [
        ds("driver", "state-driver"),
        obj("Pod", "setup", "state-validation"),
        ds("plugin", "state-device-plugin"),
    ]
    world = World(desired=wanted(LINEAR, objects, NODES), nodes={n: node(n) for n in NODES})
    world.settle()
    labelled = {n: dict(world.nodes[n].labels) for n in NODES}
    assert all(
        world.complete_states(n) == {"state-driver", "state-validation", "state-device-plugin"} for n in NODES
    )
    _collected(world, "setup")

    p = world.step()
    assert labels_of(p) == {} and p.delete == ()
    assert [o.ref.name for o in p.apply if o.kind == "Pod"] == []
    world.settle()
    assert world.created.count(obj("Pod", "setup", "s").ref) == 1
    assert {n: dict(world.nodes[n].labels) for n in NODES} == labelled

    # With no node left carrying the state's label, nothing records it: it runs again.
    for n in NODES:
        labels = {k: v for k, v in world.nodes[n].labels.items() if k != label("state-validation")}
        world.nodes[n] = replace(world.nodes[n], labels=labels)
    world.settle()
    assert world.created.count(obj("Pod", "setup", "s").ref) == 2


def test_a_node_cached_older_than_sros_patch_of_it_is_read_as_that_patch_returned_it() -> None:
    # While the cache lags sro's last patch of a node, that patch's answer says which
    # ready labels the node carries: one sro just removed (a reset) is no record, one it
    # just set is, though the cache does not show it yet. Newer caches speak for themselves.
    world = linear_world()
    world.settle()
    ready = {k: v for k, v in world.nodes["n1"].labels.items() if k.startswith(lifecycle.label_prefix(SR))}
    without = {k: v for k, v in ready.items() if k != label("state-validation")}
    for n in ("n1", "n2", "n3"):
        world.nodes[n] = replace(world.nodes[n], resource_version="41")
    world.node_answers = {
        "n1": observed.NodeAnswer(version=42, labels=without),  # cache still shows the label
        "n2": observed.NodeAnswer(version=42, labels=ready),
        "n3": observed.NodeAnswer(version=40, labels=without),  # the cache is newer
    }
    world.nodes["n2"] = replace(
        world.nodes["n2"],
        labels={k: v for k, v in world.nodes["n2"].labels.items() if k != label("state-validation")},
    )
    for n in NODES:
        _collected(world, f"validate-{n}")
    p = world.step()
    assert labels_of(p)["n1"][label("state-validation")] is None
    assert [o.ref.name for o in p.apply if o.kind == "Pod"] == ["validate-n1"]
    assert None not in labels_of(p).get("n2", {}).values()
    assert "n3" not in labels_of(p)


def test_a_new_template_generation_is_not_ready_until_its_pod_replaces_the_old_one() -> None:
    world = linear_world()
    world.settle()
    driver = obj("DaemonSet", "driver", "s").ref
    world.objects[driver] = replace(world.objects[driver], generation=2, template_generation=2)
    p = world.step()
    assert p.walk is not None
    assert {p.walk.nodes[n]["state-driver"].phase.value for n in NODES} == {"Progressing"}
    assert "old template generation" in p.walk.nodes["n1"]["state-driver"].reason
    assert {c.node for c in p.node_labels} == set(NODES)


def test_wait_for_logs_gates_the_state_and_asks_for_the_logs_it_needs() -> None:
    d = ds("driver", "state-driver", logs=r"driver loaded")
    pod = ds_pod(d, "n1")
    want = wanted(states("state-driver"), [d], ["n1"])
    without = planner.plan(want, seen([node("n1")], objects=[live(d)], pods=[pod]), now=T0)
    assert [r.uid for r in without.logs_needed] == [pod.uid]
    assert without.requeue_after == log_polls.LOG_POLL.total_seconds()
    assert without.status["phase"] == "Progressing"

    logs = {pod.uid: {"main": "loading\ndriver loaded\n"}}
    matched = planner.plan(want, seen([node("n1")], objects=[live(d)], pods=[pod], logs=logs), now=T0)
    assert matched.logs_needed == () and matched.requeue_after is None
    assert matched.status["phase"] == "Ready"


def restarted_world() -> tuple[desired.DesiredState, list[views.PodView]]:
    """A node through driver (waiting for its logs), validation and plugin, as a new
    operator process finds it: every label set, every pod there, no tail read yet."""
    driver = ds("driver", "state-driver", logs=r"driver loaded")
    validation = node_pods("validate", "state-validation", ["n1"])
    plugin = ds("plugin", "state-plugin")
    chain = states("state-driver", "state-validation", "state-plugin")
    want = wanted(chain, [driver, *validation, plugin], ["n1"])
    return want, [ds_pod(driver, "n1"), bare_pod(validation[0]), ds_pod(plugin, "n1")]


def walked_node(*names: str, matched: str = "") -> views.NodeView:
    """Node n1 as sro leaves it once ``names`` are complete there (``matched``: its record
    of the pods whose log matched)."""
    labels = {**{label(n): "ready" for n in names}, lifecycle.complete_label(SR): "true"}
    notes = {lifecycle.kernel_annotation(SR): K1.key}
    if matched:
        notes[lifecycle.logs_annotation(SR)] = matched
    return node("n1", labels, annotations=notes)


def test_a_restarted_operator_keeps_a_recorded_log_match_until_it_reads_the_tail() -> None:
    want, pods = restarted_world()
    labelled = walked_node("state-driver", "state-validation", "state-plugin")
    objects = [live(o) for o in want.objects]
    first = planner.plan(want, seen([labelled], objects=objects, pods=pods), now=T0)
    # Nothing reset, deleted or made again: the label is sro's record of the match ...
    assert first.node_labels == () and first.delete == ()
    assert [o.ref.name for o in first.apply if o.kind == "Pod"] == []
    assert first.status["phase"] == "Ready"
    # ... and the tail is read all the same.
    assert [r.uid for r in first.logs_needed] == [pods[0].uid]

    # Read, and matching: nothing more to ask.
    logs = {pods[0].uid: {"main": "driver loaded\n"}}
    read = planner.plan(want, seen([labelled], objects=objects, pods=pods, logs=logs), now=T0)
    assert read.logs_needed == () and read.node_labels == () and read.status["phase"] == "Ready"


def test_a_tail_read_without_the_match_resets_the_later_states_even_where_recorded() -> None:
    want, pods = restarted_world()
    labelled = walked_node("state-driver", "state-validation", "state-plugin")
    objects = [live(o) for o in want.objects]
    logs = {pods[0].uid: {"main": "still building\n"}}
    planned = planner.plan(want, seen([labelled], objects=objects, pods=pods, logs=logs), now=T0)
    assert planned.walk is not None
    assert planned.walk.nodes["n1"]["state-driver"].phase.value == "Progressing"
    assert labels_of(planned)["n1"][label("state-plugin")] is None
    assert [d.ref.name for d in planned.delete] == ["validate-n1"]


def test_an_unread_tail_on_a_node_without_the_label_waits_and_the_memo_sees_the_label_go() -> None:
    want, pods = restarted_world()
    labelled = walked_node("state-driver", "state-validation", "state-plugin")
    objects = [live(o) for o in want.objects]
    first = planner.plan(want, seen([labelled], objects=objects, pods=pods), now=T0)
    assert first.walk is not None
    # Someone takes the driver's label off; the tail is still unread: the walk must not
    # answer from its memory of the labelled node.
    bare = node("n1", {k: v for k, v in labelled.labels.items() if k != label("state-driver")})
    again = planner.plan(want, seen([bare], objects=objects, pods=pods, walk_memo=first.walk.memo), now=T0)
    assert again.walk is not None
    assert again.walk.nodes["n1"]["state-driver"].phase.value == "Progressing"
    assert "waiting for logs" in again.walk.nodes["n1"]["state-driver"].reason


def test_the_label_that_completes_a_logged_state_records_the_matching_pod_on_the_node() -> None:
    want, pods = restarted_world()
    fresh = node("n1", annotations={lifecycle.kernel_annotation(SR): K1.key})
    objects = [live(o) for o in want.objects]
    logs = {pods[0].uid: {"main": "building\ndriver loaded\n"}}
    planned = planner.plan(want, seen([fresh], objects=objects, pods=pods[:1], logs=logs), now=T0)
    (change,) = planned.node_labels
    assert change.labels[label("state-driver")] == "ready"
    assert change.annotations == {lifecycle.logs_annotation(SR): pods[0].uid}


def test_a_restart_trusts_the_recorded_match_without_reading_the_log_again() -> None:
    want, pods = restarted_world()
    noted = walked_node("state-driver", "state-validation", "state-plugin", matched=pods[0].uid)
    objects = [live(o) for o in want.objects]
    # The tail read since holds no match any more (the driver logged on): the record stands.
    for logs in ({}, {pods[0].uid: {"main": "heartbeat\n" * 3}}):
        planned = planner.plan(want, seen([noted], objects=objects, pods=pods, logs=logs), now=T0)
        assert planned.logs_needed == () and planned.node_labels == () and planned.delete == ()
        assert planned.status["phase"] == "Ready"


def test_a_record_of_another_pod_is_no_match_and_a_reset_takes_it_off() -> None:
    want, pods = restarted_world()
    noted = walked_node("state-driver", "state-validation", "state-plugin", matched="an-older-pod")
    objects = [live(o) for o in want.objects]
    # Replaced while no operator ran: the label the old pod earned proves nothing of the
    # new one, which waits for its own tail ...
    unread = planner.plan(want, seen([noted], objects=objects, pods=pods), now=T0)
    assert [r.uid for r in unread.logs_needed] == [pods[0].uid]
    assert unread.walk is not None
    assert unread.walk.nodes["n1"]["state-driver"].phase.value == "Progressing"
    # ... and without the match, the later states reset and the stale record goes with them.
    logs = {pods[0].uid: {"main": "still building\n"}}
    planned = planner.plan(want, seen([noted], objects=objects, pods=pods, logs=logs), now=T0)
    (change,) = planned.node_labels
    assert change.labels[label("state-plugin")] is None
    assert change.annotations == {lifecycle.logs_annotation(SR): None}


def test_removing_a_special_resource_takes_its_log_record_off_the_nodes() -> None:
    noted = node("n1", {label("state-driver"): "ready"}, annotations={lifecycle.logs_annotation(SR): "uid-1"})
    (change,) = lifecycle.strip_nodes(SR, [noted])
    assert change.annotations == {lifecycle.logs_annotation(SR): None}
    assert change.labels == {label("state-driver"): None}


@pytest.mark.parametrize(("age", "poll"), [(0.5, 1.0), (2.0, 1.0), (20.0, 5.0), (100.0, 10.0), (None, 10.0)])
def test_a_young_pod_s_log_is_fetched_often_an_old_one_every_ten_seconds(
    age: float | None, poll: float
) -> None:
    d = ds("driver", "state-driver", logs=r"driver loaded")
    created = "" if age is None else (T0 - timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pod = replace(ds_pod(d, "n1"), created=created)
    want = wanted(states("state-driver"), [d], ["n1"])
    planned = planner.plan(want, seen([node("n1")], objects=[live(d)], pods=[pod]), now=T0)
    assert planned.requeue_after == pytest.approx(poll, abs=0.01)


def kernel_world() -> World:
    validation = node_pods("validate", "state-validation", ["n1", "n2"])
    objects = [ds("driver-k1", "state-driver", group=K1), *validation]
    return World(
        desired=wanted(states("state-driver", "state-validation"), objects, ["n1", "n2"]),
        nodes={"n1": node("n1"), "n2": node("n2")},
    )


def test_a_kernel_change_moves_the_node_to_its_new_group_and_deletes_the_empty_group() -> None:
    world = kernel_world()
    world.settle()
    assert world.nodes["n2"].annotations[lifecycle.kernel_annotation(SR)] == K1.key
    # n2 boots a new kernel: rendering now makes a copy for K2 too.
    moved = [
        ds("driver-k1", "state-driver", group=K1),
        ds("driver-k2", "state-driver", group=K2),
        *node_pods("validate", "state-validation", ["n1", "n2"]),
    ]
    world.desired = wanted(world.desired.states, moved, ["n1", "n2"], groups={"n1": K1, "n2": K2})
    reset = world.step()
    assert labels_of(reset)["n2"] == {
        label("state-driver"): None,
        label("state-validation"): None,
        lifecycle.complete_label(SR): None,
    }
    assert [c.annotations for c in reset.node_labels] == [{lifecycle.kernel_annotation(SR): K2.key}]
    assert [d.ref.name for d in reset.delete] == ["validate-n2"]
    assert [e.reason for e in reset.events] == [events.KERNEL_GROUP_ADDED]
    world.settle()
    assert world.complete_states("n2") == {"state-driver", "state-validation"}

    # n1 follows: no node is left on K1, so its DaemonSet goes.
    validation = node_pods("validate", "state-validation", ["n1", "n2"])
    last = [ds("driver-k2", "state-driver", group=K2), *validation]
    world.desired = wanted(world.desired.states, last, ["n1", "n2"], groups={"n1": K2, "n2": K2})
    gone = world.step()
    assert [(d.ref.name, d.reason) for d in gone.delete] == [
        ("driver-k1", "no longer desired"),
        (
            "validate-n1",
            "state-validation is not open on n1 (kernel changed: the node walks the states again): "
            "its pod runs again when it opens",
        ),
    ]
    assert [e.reason for e in gone.events] == [events.KERNEL_GROUP_REMOVED]
    assert [r.name for r in gone.removed] == ["driver-k1"]  # the pod is not "removed": it runs again
    (removal,) = events.objects_removed(gone.removed)
    assert removal.message == "deleted 1 object: DaemonSet/gpu-ns/driver-k1"
    world.settle()
    assert world.status["kernels"] == [{"kernel": K2.kernel, "os": "rhel9.4", "nodes": 2}]


def test_a_node_that_leaves_the_selection_loses_its_labels_and_its_per_node_pod() -> None:
    world = linear_world()
    world.settle()
    world.desired = wanted(LINEAR, gpu_objects(("n1", "n2")), ("n1", "n2"))
    p = world.step()
    assert labels_of(p)["n3"] == {
        label("state-driver"): None,
        label("state-validation"): None,
        label("state-device-plugin"): None,
        lifecycle.complete_label(SR): None,
    }
    assert p.node_labels[-1].annotations == {lifecycle.kernel_annotation(SR): None}
    assert [d.ref.name for d in p.delete] == ["validate-n3"]
    assert p.status["ready"] == "2/2"


def test_an_unchanged_world_plans_no_events_no_writes_and_the_same_status() -> None:
    world = linear_world()
    world.settle()
    first = world.step()
    again = planner.plan(world.desired, world.observe(), now=T0.replace(hour=9))
    assert again.events == () and first.events == ()
    assert again.node_labels == () and again.delete == ()
    assert not summary.status_changed(first.status, again.status)


def test_a_state_completing_everywhere_is_one_event() -> None:
    world = linear_world()
    reasons = []
    for _ in range(8):
        reasons += [(e.reason, e.message) for e in world.step().events]
    assert reasons == [
        ("StateCompleted", "state-driver is complete on 3 nodes"),
        ("StateCompleted", "state-validation is complete on 3 nodes"),
        ("StateCompleted", "state-device-plugin is complete on 3 nodes"),
    ]


def test_no_selected_nodes_is_reported_as_such_and_still_cleans_up() -> None:
    world = linear_world()
    world.settle()
    world.desired = wanted(LINEAR, [ds("driver", "state-driver"), ds("plugin", "state-device-plugin")], [])
    p = world.step()
    assert p.status["phase"] == "NoNodes"
    assert p.status["conditions"][0]["reason"] == "NoMatchingNodes"
    assert {c.node for c in p.node_labels} == set(NODES)
    assert sorted(d.ref.name for d in p.delete) == ["validate-n1", "validate-n2", "validate-n3"]
    assert {o.ref.name for o in p.apply} == {"driver", "plugin"}  # already there: kept up to date


def test_teardown_deletes_everything_strips_every_node_and_then_frees_the_finalizer() -> None:
    world = linear_world()
    world.settle()
    namespace = obj("Namespace", NS, "state-driver", namespace="")
    world.objects[namespace.ref] = live(namespace, phase="Active")
    down = planner.plan_teardown(sr_name=SR, seen=world.observe(), generation=2, now=T0)
    names = ["driver", "plugin", "validate-n1", "validate-n2", "validate-n3", NS]
    assert [d.ref.name for d in down.delete] == names  # workloads first, the namespace last
    assert {c.node for c in down.node_labels} == set(NODES)
    assert not down.finalizer_removable
    assert down.status["phase"] == "Removed"

    for d in down.delete:
        world.objects.pop(d.ref, None)
    for change in down.node_labels:
        world.nodes[change.node] = node(change.node)
    world.pods.clear()
    done = planner.plan_teardown(sr_name=SR, seen=world.observe(), generation=2, now=T0)
    assert done.finalizer_removable and done.delete == () and done.node_labels == ()
    assert done.status["state"] == "Removed: everything sro made is deleted"


def test_the_srs_taints_go_on_selected_nodes_and_come_off_departed_ones() -> None:
    taint = views.Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")
    record = {"sro.dev/taints.gpu": '[{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}]'}
    gone = views.NodeView(name="old", taints=(taint,), annotations=record)
    want = wanted(states("s"), [], ["n1"])
    p = planner.plan(want, seen([node("n1")], departed=(gone,), taints=(taint,)), now=T0)
    assert {c.node: c.taints for c in p.node_labels} == {"n1": (taint,), "old": ()}


def test_a_problem_reason_outside_the_contract_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Degraded reason"):
        summary.Problem(reason="Whatever", message="")


def test_a_failed_cluster_wide_pod_is_not_applied_while_it_waits_for_its_retry() -> None:
    job_pod = obj("Pod", "build", "state-build")
    want = wanted(states("state-build"), [job_pod], ["n1"])
    p = planner.plan(want, seen([node("n1")], objects=[live(job_pod)], pods=[failed_pod(job_pod)]), now=T0)
    assert p.apply == () and p.delete == ()
    assert p.requeue_after == 10.0
    assert p.status["state"] == "Degraded: StateFailed on 1 node (n1: Error (exit code 1))"


def test_teardown_reports_the_removal_only() -> None:
    world = linear_world()
    world.settle()
    down = planner.plan_teardown(sr_name=SR, seen=world.observe(), generation=2, now=T0)
    assert down.events == ()  # no state or kernel group "ends": only the removal, once deleted
    assert down.delete and down.removed == tuple(d.ref for d in down.delete)
    assert [e.reason for e in events.objects_removed(down.removed)] == [events.OBJECTS_REMOVED]


def test_a_per_node_pod_is_applied_only_once_its_node_carries_the_after_labels() -> None:
    d = ds("driver", "state-driver")
    (validate,) = node_pods("validate", "state-validation", ["n1"])
    want = wanted(states("state-driver", "state-validation"), [d, validate], ["n1"])
    bare = seen([node("n1")], objects=[live(d)], pods=[ds_pod(d, "n1")])
    labelled = seen([node("n1", {label("state-driver"): "ready"})], objects=[live(d)], pods=[ds_pod(d, "n1")])
    first = planner.plan(want, bare, now=T0)
    assert first.walk is not None and first.walk.nodes["n1"]["state-validation"].open
    assert [o.ref.name for o in first.apply] == ["driver"]
    assert labels_of(first) == {"n1": {label("state-driver"): "ready"}}
    # The pod follows the node's patch in the same pass, once the patch shows the label.
    assert [(f.obj.ref.name, f.labels) for f in first.follow] == [("validate-n1", (label("state-driver"),))]
    assert actions.followers(first.follow, {"n1": {}}) == ()
    assert actions.followers(first.follow, {}) == ()
    shown = {"n1": {label("state-driver"): "ready"}}
    assert [o.ref.name for o in actions.followers(first.follow, shown)] == ["validate-n1"]
    assert "state-validation" in first.opening
    second = planner.plan(want, labelled, now=T0)
    assert [o.ref.name for o in second.apply] == ["driver", "validate-n1"]
    assert second.follow == ()


def test_a_per_node_pod_waits_for_labels_no_patch_of_this_pass_sets() -> None:
    d = ds("driver", "state-driver")
    (validate,) = node_pods("validate", "state-validation", ["n1"])
    want = wanted(states("state-driver", "state-validation"), [d, validate], ["n1"])
    # The driver pod is not ready: no label is set, so the pod neither goes nor follows.
    waiting = seen([node("n1")], objects=[live(d)], pods=[ds_pod(d, "n1", ready=False)])
    p = planner.plan(want, waiting, now=T0)
    assert [o.ref.name for o in p.apply] == ["driver"]
    assert p.follow == ()


def test_a_pass_carries_at_most_its_budget_of_per_node_writes_and_the_next_comes_at_once() -> None:
    many = tuple(f"n{i:04d}" for i in range(planner.PASS_WRITES + 40))
    d = ds("driver", "state-driver")
    pods = node_pods("validate", "state-validation", many)
    want = wanted(states("state-driver", "state-validation"), [d, *pods], many)
    driver_ready = {label("state-driver"): "ready"}
    fresh = seen([node(n) for n in many], objects=[live(d)], pods=[ds_pod(d, n) for n in many])
    first = planner.plan(want, fresh, now=T0)
    assert len(first.node_labels) == planner.PASS_WRITES
    assert first.requeue_after == 0
    labelled = seen(
        [node(n, driver_ready) for n in many], objects=[live(d)], pods=[ds_pod(d, n) for n in many]
    )
    second = planner.plan(want, labelled, now=T0)
    per_node = [o for o in second.apply if o.node is not None]
    assert [o.ref.name for o in second.apply if o.node is None] == ["driver"], "cluster-wide objects all go"
    assert len(per_node) == planner.PASS_WRITES
    assert second.requeue_after == 0
    done = {o.node for o in per_node}
    rest = seen(
        [node(n, driver_ready) for n in many],
        objects=[live(d), *(live(o) for o in per_node)],
        pods=[*(ds_pod(d, n) for n in many), *(bare_pod(o, phase="Running") for o in per_node)],
    )
    third = planner.plan(want, rest, now=T0)
    assert {o.node for o in third.apply if o.node is not None} == set(many) - done


def test_a_pass_with_more_node_changes_than_it_carries_serves_the_nodes_furthest_behind_first() -> None:
    # The first nodes by name are a state ahead (their driver recorded, their validation
    # done); the rest wait for their driver's label. Each node has one change pending.
    many = tuple(f"n{i:04d}" for i in range(planner.PASS_WRITES + 40))
    ahead, behind = many[: planner.PASS_WRITES], many[planner.PASS_WRITES :]
    d = ds("driver", "state-driver")
    pods = node_pods("validate", "state-validation", many)
    want = wanted(states("state-driver", "state-validation"), [d, *pods], many)
    driver_ready = {label("state-driver"): "ready"}
    p = planner.plan(
        want,
        seen(
            [*(node(n, driver_ready) for n in ahead), *(node(n) for n in behind)],
            objects=[live(d), *(live(o) for o in pods if o.node in ahead)],
            pods=[
                *(ds_pod(d, n) for n in many),
                *(bare_pod(o, phase="Succeeded") for o in pods if o.node in ahead),
            ],
        ),
        now=T0,
    )
    carried = labels_of(p)
    assert len(carried) == planner.PASS_WRITES and p.requeue_after == 0
    assert set(behind) <= set(carried), "every node still without its first label is served"
    assert all(carried[n] == driver_ready for n in behind)
    assert [c.node for c in p.node_labels] == sorted(carried)
    # The ahead nodes served are the first by name; the rest come next pass.
    assert set(carried) - set(behind) == set(ahead[: planner.PASS_WRITES - len(behind)])


def _finished_world(nodes: tuple[str, ...]) -> tuple[World, frozenset[desired.ObjectRef]]:
    """Every validation pod ran and was collected before a pass saw it succeed."""
    world = World(
        desired=wanted(LINEAR, gpu_objects(nodes), nodes),
        nodes={n: node(n) for n in nodes},
        pod_outcome={f"validate-{n}": "Running" for n in nodes},
    )
    world.settle(limit=60)
    refs = frozenset(obj("Pod", f"validate-{n}", "s").ref for n in nodes)
    for ref in refs:
        _collected(world, ref.name)
    return world, refs


def test_proofs_of_pods_gone_are_handed_on_until_their_labels_are_recorded() -> None:
    # More nodes than one pass patches: the proofs whose labels did not fit wait for the next.
    many = tuple(f"n{i:04d}" for i in range(planner.PASS_WRITES + 40))
    world, refs = _finished_world(many)
    world.finished = refs
    first = world.step()
    assert len(first.node_labels) == planner.PASS_WRITES
    assert first.finished == refs  # no label is seen yet
    world.finished = first.finished  # what the engine hands on
    second = world.step()
    assert len(second.finished) == 40  # the labels of the first pass's nodes are seen
    for _ in range(6):
        world.finished = world.step().finished
    assert world.finished == frozenset()
    world.settle()
    assert all(world.created.count(ref) == 1 for ref in refs), "no validation ran twice"
    assert all("state-validation" in world.complete_states(n) for n in many)


def test_a_proof_is_dropped_once_its_node_is_reset() -> None:
    world, _ = _finished_world(NODES)
    ref = obj("Pod", "validate-n1", "s").ref
    key = (NS, "driver-n1")
    world.pods[key] = replace(world.pods[key], ready=False)  # the driver pod is replaced
    world.finished = frozenset({ref})
    p = world.step()
    assert p.finished == frozenset()
    assert label("state-validation") not in labels_of(p).get("n1", {})
    world.pods[key] = replace(world.pods[key], ready=True)
    world.finished = frozenset()
    world.pod_outcome = {}
    world.settle()
    assert world.created.count(ref) == 2, "after the reset the validation runs again"


def test_a_driver_being_replaced_waits_for_its_own_tail_even_under_the_old_label() -> None:
    want, pods = restarted_world()
    labelled = walked_node("state-driver", "state-validation", "state-plugin")
    objects = [live(o) for o in want.objects]
    observed_ = seen([labelled], objects=objects, pods=pods)
    kept = walk.walk(want, observed_)
    assert kept.nodes["n1"]["state-driver"].phase.value == "Complete"  # no record, not replacing
    replacing = walk.walk(want, observed_, upgrading=frozenset({"n1"}))
    assert replacing.nodes["n1"]["state-driver"].phase.value == "Progressing"
    assert "waiting for logs" in replacing.nodes["n1"]["state-driver"].reason


def test_a_fleet_whose_complete_labels_do_not_fit_in_one_pass_is_not_ready_before_they_are_written() -> None:
    # Every node's one state is done at once (its pod Ready), and the label patches are
    # more than one pass carries: Ready must wait for the last of them.
    many = tuple(f"n{i:04d}" for i in range(planner.PASS_WRITES + 40))
    world = World(
        desired=wanted(states("state-driver"), [ds("driver", "state-driver")], many),
        nodes={n: node(n) for n in many},
    )
    world.step()  # the DaemonSet: its pods come Ready on every node
    labelled = world.step()
    assert len(labels_of(labelled)) == planner.PASS_WRITES
    status = world.status
    assert status["phase"] == "Progressing" and status["state"] == "Progressing: labelling 40 nodes complete"
    assert status["nodes"] == {"selected": len(many), "complete": planner.PASS_WRITES}
    assert next(c for c in status["conditions"] if c["type"] == "Ready")["status"] == "False"
    last = world.step()
    assert len(labels_of(last)) == 40
    assert world.status["phase"] == "Ready" and world.status["nodes"]["complete"] == len(many)
    assert all(world.nodes[n].labels[label("complete")] == "true" for n in many)
