"""What takes a node's later states back in the plan, and what must not.

A reset deletes the node's per-node pods and takes its labels off, so the states after
it run again there: right when the workload they rest on was really replaced, a write
per node and a validation run for nothing otherwise. Covers a replaced driver pod
(resets the later states on that node only); a pod whose Ready the node controller
withdrew because its kubelet stopped reporting (resets nothing, relabels no node, be it
a driver pod or a cluster-wide Deployment's); a node cached older than sro's last patch
of it (read as that patch returned it); a new template generation (not ready until its
pod replaced the old one).

Driven through ``World`` (builders), an in-memory stand-in for the cluster between
reconciles.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import (
    NODES,
    NS,
    SR,
    World,
    _collected,
    ds,
    label,
    labels_of,
    linear_world,
    live,
    node,
    obj,
    replica_pod,
    states,
    wanted,
)

from sro.plan import lifecycle, observed

pytestmark = pytest.mark.unit


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


def test_a_node_cached_older_than_sros_patch_of_it_is_read_as_that_patch_returned_it() -> None:
    # While the cache lags sro's last patch of a node, that patch's answer says which
    # ready labels the node carries: one sro just removed (a reset) is no record, one it
    # just set is, though the cache does not show it yet, and neither is sent again.
    # Newer caches speak for themselves.
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
    assert label("state-validation") not in labels_of(p).get("n1", {})  # removed already
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
