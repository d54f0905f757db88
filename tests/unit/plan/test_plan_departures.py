"""Nodes leaving what they were planned under, and the SpecialResource leaving altogether.

Covers a kernel change (the node moves to its new group and walks the states again;
a group no node is left in is deleted, with its Events; its new group recorded only
along with the deletion of its per-node pods, which waits while the caches lag); a node
that leaves the
selection (its labels, per-node pod and the SpecialResource's taints come off); no
selected node at all (reported as such, and still cleaned up); teardown (everything
deleted, workloads first and the namespace last, every node stripped, the finalizer
freed only once nothing is left, the removal the only thing reported).

Driven through ``World`` (builders), an in-memory stand-in for the cluster between
reconciles.
"""

from __future__ import annotations

import pytest
from builders import (
    K1,
    K2,
    LINEAR,
    NODES,
    NS,
    SR,
    T0,
    World,
    ds,
    gpu_objects,
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

from sro.model import views
from sro.plan import lifecycle, planner
from sro.status import events

pytestmark = pytest.mark.unit


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


def test_a_reset_is_recorded_only_along_with_the_deletion_of_the_nodes_pods() -> None:
    """While the caches lag sro's own writes, a pod's deletion waits (``fresh_enough``):
    the reset takes the node's labels off but leaves its kernel record, so the next pass
    resets it again, and the validation pod of the old kernel, still there once the new
    driver is up, never counts as a run on the new one."""
    world = kernel_world()
    world.settle()
    before = world.pods[(NS, "validate-n2")].uid
    moved = [
        ds("driver-k1", "state-driver", group=K1),
        ds("driver-k2", "state-driver", group=K2),
        *node_pods("validate", "state-validation", ["n1", "n2"]),
    ]
    world.desired = wanted(world.desired.states, moved, ["n1", "n2"], groups={"n1": K1, "n2": K2})
    world.lagging = frozenset({("v1", "Node")})
    for _ in range(2):  # the new driver's pod is up on n2 after the first
        held = world.step()
        assert held.delete == ()
        assert world.nodes["n2"].annotations[lifecycle.kernel_annotation(SR)] == K1.key
        assert world.complete_states("n2") == set()
    assert world.pods[(NS, "driver-k2-n2")].ready  # the new driver is up: only the reset holds n2
    world.lagging = frozenset()
    reset = world.step()
    assert [d.ref.name for d in reset.delete] == ["validate-n2"]
    assert world.nodes["n2"].annotations[lifecycle.kernel_annotation(SR)] == K2.key
    world.settle()
    assert world.complete_states("n2") == {"state-driver", "state-validation"}
    assert world.pods[(NS, "validate-n2")].uid != before  # it ran again, on the new kernel


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


def test_teardown_reports_the_removal_only() -> None:
    world = linear_world()
    world.settle()
    down = planner.plan_teardown(sr_name=SR, seen=world.observe(), generation=2, now=T0)
    assert down.events == ()  # no state or kernel group "ends": only the removal, once deleted
    assert down.delete and down.removed == tuple(d.ref for d in down.delete)
    assert [e.reason for e in events.objects_removed(down.removed)] == [events.OBJECTS_REMOVED]
