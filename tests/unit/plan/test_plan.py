"""The plan as the engine will execute it: apply order, per-node pods that follow their
node's labels, the budget of per-node writes one pass carries (and which nodes it serves
first), and that an unchanged world plans nothing new.

Driven through ``World`` (builders), an in-memory stand-in for the cluster between
reconciles. The rest of the plan has a ``test_plan_*`` module per subject: retries,
resets, finished pods, wait-for-logs, departures and teardown; readiness and walking
details have their own tests.
"""

from __future__ import annotations

import pytest
from builders import (
    NS,
    T0,
    World,
    bare_pod,
    ds,
    ds_pod,
    label,
    labels_of,
    linear_world,
    live,
    node,
    node_pods,
    obj,
    seen,
    states,
    wanted,
)

from sro.plan import actions, planner
from sro.status import summary

pytestmark = pytest.mark.unit


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
