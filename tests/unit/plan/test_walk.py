"""Per-node state walking, stepped through ``World`` the way the engine will run it.

Covers: a linear recipe walking state by state, parallel states opening together, a new
node walking in order while the others stay put, zero-object states, ``wait: false``,
cluster-wide objects gating every node, kernel-affine DaemonSets per group, and the state
graph's order and errors. What the plan applies and deletes is the subject of ``test_plan``
and the ``test_plan_*`` modules.
"""

from __future__ import annotations

import pytest
from builders import (
    K1,
    K2,
    SR,
    World,
    bare_pod,
    container,
    ds,
    ds_pod,
    label,
    live,
    node,
    node_pods,
    obj,
    seen,
    states,
    wanted,
)

from sro import errors
from sro.model import desired, progress
from sro.plan import lifecycle, walk

pytestmark = pytest.mark.unit

Phase = progress.Phase
NODES = ("n1", "n2", "n3")
LINEAR = states("state-driver", "state-validation", "state-device-plugin")


def linear_world() -> World:
    objects = [
        ds("driver", "state-driver"),
        *node_pods("validate", "state-validation", NODES),
        ds("plugin", "state-device-plugin"),
    ]
    return World(desired=wanted(LINEAR, objects, NODES), nodes={n: node(n) for n in NODES})


def test_a_linear_recipe_walks_state_by_state_on_every_node() -> None:
    world = linear_world()
    first = world.step()
    assert [o.ref.name for o in first.apply] == ["driver"]
    assert first.walk is not None
    assert {first.walk.nodes[n]["state-driver"].phase for n in NODES} == {Phase.PROGRESSING}
    assert {first.walk.nodes[n]["state-validation"].phase for n in NODES} == {Phase.PENDING}

    second = world.step()  # driver pods ready: driver complete and labelled, validation opens
    assert {n: world.complete_states(n) for n in NODES} == {n: {"state-driver"} for n in NODES}
    assert second.walk is not None
    assert {second.walk.nodes[n]["state-validation"].phase for n in NODES} == {Phase.PROGRESSING}
    assert [o.ref.name for o in second.apply] == ["driver"]  # pinned pods follow the labels

    third = world.step()
    assert sorted(o.ref.name for o in third.apply) == ["driver", "validate-n1", "validate-n2", "validate-n3"]

    world.settle()
    for n in NODES:
        assert world.complete_states(n) == {"state-driver", "state-validation", "state-device-plugin"}
        assert world.nodes[n].labels["gpu.sro.dev/complete"] == "true"
    assert world.status["state"] == "Ready: 3/3 nodes"


def test_a_later_state_is_never_applied_before_its_after_state_is_complete_somewhere() -> None:
    world = linear_world()
    applied_before_driver_ready = {o.ref.name for o in world.step().apply}
    assert "plugin" not in applied_before_driver_ready
    assert not any(name.startswith("validate") for name in applied_before_driver_ready)


def test_parallel_states_after_the_same_state_open_together() -> None:
    recipe = states(
        "state-driver",
        ("state-monitoring", ["state-driver"]),
        ("state-feature-discovery", ["state-driver"]),
        ("state-grafana", ["state-monitoring"]),
    )
    objects = [
        ds("driver", "state-driver"),
        ds("exporter", "state-monitoring"),
        ds("gfd", "state-feature-discovery"),
        obj("Deployment", "grafana", "state-grafana"),
    ]
    world = World(desired=wanted(recipe, objects, ["n1"]), nodes={"n1": node("n1")})
    world.step()
    opened = world.step()
    assert opened.walk is not None
    assert {o.ref.name for o in opened.apply} == {"driver", "exporter", "gfd"}
    assert opened.walk.nodes["n1"]["state-monitoring"].phase is Phase.PROGRESSING
    assert opened.walk.nodes["n1"]["state-feature-discovery"].phase is Phase.PROGRESSING
    assert opened.walk.nodes["n1"]["state-grafana"].phase is Phase.PENDING


def test_a_new_node_walks_in_order_while_the_others_stay_complete() -> None:
    world = linear_world()
    world.settle()
    world.nodes["n4"] = node("n4")
    objects = [
        ds("driver", "state-driver"),
        *node_pods("validate", "state-validation", (*NODES, "n4")),
        ds("plugin", "state-device-plugin"),
    ]
    world.desired = wanted(LINEAR, objects, (*NODES, "n4"))
    before = {n: dict(world.nodes[n].labels) for n in NODES}

    first = world.step()
    assert first.walk is not None
    # n4 earned no label yet (its kernel group is recorded with its first label), and
    # nothing changes for the other nodes: no node patch at all.
    assert [c.node for c in first.node_labels] == []
    assert first.walk.nodes["n4"]["state-driver"].phase is Phase.PROGRESSING
    assert first.walk.nodes["n4"]["state-validation"].phase is Phase.PENDING
    assert "validate-n4" not in {o.ref.name for o in first.apply}
    assert first.status["state"] == "Progressing: state-driver 3/4 nodes"

    second = world.step()
    assert world.complete_states("n4") == {"state-driver"}
    (change,) = second.node_labels
    assert change.node == "n4" and set(change.annotations) == {lifecycle.kernel_annotation(SR)}
    world.settle()
    assert world.complete_states("n4") == {"state-driver", "state-validation", "state-device-plugin"}
    assert {n: dict(world.nodes[n].labels) for n in NODES} == before
    assert not world.last or not world.last.delete


def test_a_state_with_no_objects_is_complete_as_soon_as_it_opens() -> None:
    recipe = states("state-driver", "state-empty", "state-after")
    objects = [ds("driver", "state-driver"), ds("after", "state-after")]
    world = World(desired=wanted(recipe, objects, ["n1"]), nodes={"n1": node("n1")})
    world.step()
    second = world.step()
    assert second.walk is not None
    assert second.walk.nodes["n1"]["state-empty"].phase is Phase.COMPLETE
    assert label("state-empty") in world.nodes["n1"].labels
    assert "after" in {o.ref.name for o in second.apply}


def test_an_object_with_wait_false_does_not_gate_its_state() -> None:
    d = ds("driver", "state-driver", wait=False)
    result = walk.walk(wanted(states("state-driver"), [d], ["n1"]), seen([node("n1")]))
    assert result.nodes["n1"]["state-driver"].phase is Phase.COMPLETE


def test_a_cluster_wide_workload_gates_the_state_on_every_node() -> None:
    deploy = obj("Deployment", "grafana", "state-driver")
    d = ds("driver", "state-driver")
    want = wanted(states("state-driver"), [d, deploy], ["n1", "n2"])
    slow = live(deploy, observed_generation=1, replicas=2, available_replicas=1)
    result = walk.walk(want, seen([node("n1"), node("n2")], objects=[live(d), slow], pods=[ds_pod(d, "n1")]))
    assert result.nodes["n1"]["state-driver"].phase is Phase.PROGRESSING
    assert "1/2 available" in result.nodes["n1"]["state-driver"].reason
    assert result.nodes["n2"]["state-driver"].phase is Phase.PROGRESSING


def test_a_kernel_affine_daemonset_only_counts_on_nodes_of_its_group() -> None:
    d1 = ds("driver-k1", "state-driver", group=K1)
    d2 = ds("driver-k2", "state-driver", group=K2)
    want = wanted(states("state-driver"), [d1, d2], ["n1", "n2"], groups={"n1": K1, "n2": K2})
    # n1 has its group's pod; n2 has only a pod of the other group's DaemonSet.
    view = seen(
        [node("n1"), node("n2")],
        objects=[live(d1), live(d2)],
        pods=[ds_pod(d1, "n1"), ds_pod(d1, "n2")],
    )
    result = walk.walk(want, view)
    assert result.nodes["n1"]["state-driver"].phase is Phase.COMPLETE
    assert result.nodes["n2"]["state-driver"].phase is Phase.PROGRESSING
    assert "driver-k2" in result.nodes["n2"]["state-driver"].reason


def test_a_per_node_pod_only_concerns_its_own_node() -> None:
    pods = node_pods("validate", "state-validation", ["n1", "n2"])
    want = wanted(states("state-validation"), pods, ["n1", "n2"])
    result = walk.walk(want, seen([node("n1"), node("n2")], pods=[bare_pod(pods[0])]))
    assert result.nodes["n1"]["state-validation"].phase is Phase.COMPLETE
    assert result.nodes["n2"]["state-validation"].phase is Phase.PROGRESSING


def test_a_failure_wins_over_waiting_and_a_stuck_reason_wins_over_a_plain_wait() -> None:
    a, b = ds("a", "s"), ds("b", "s")
    pods = [
        ds_pod(a, "n1", ready=False),
        ds_pod(b, "n1", ready=False, containers=()),
    ]
    stuck = ds_pod(b, "n1", ready=False, containers=(container(waiting_reason="ImagePullBackOff"),))
    want = wanted(states("s"), [a, b], ["n1"])
    plain = walk.walk(want, seen([node("n1")], objects=[live(a), live(b)], pods=pods))
    named = walk.walk(want, seen([node("n1")], objects=[live(a), live(b)], pods=[pods[0], stuck]))
    assert plain.nodes["n1"]["s"].reason == f"pod {pods[0].name} not ready"
    assert named.nodes["n1"]["s"].reason.startswith("ImagePullBackOff")
    assert named.nodes["n1"]["s"].stuck


def test_the_walk_order_puts_every_after_state_first_and_keeps_recipe_order_otherwise() -> None:
    recipe = (
        desired.StateSpec(name="c", after=("b",)),
        desired.StateSpec(name="a"),
        desired.StateSpec(name="b", after=("a",)),
        desired.StateSpec(name="d", after=("a",)),
    )
    assert walk.topological_order(recipe) == ("a", "b", "c", "d")


def test_a_cycle_or_an_unknown_after_state_is_a_recipe_error() -> None:
    cycle = (desired.StateSpec(name="a", after=("b",)), desired.StateSpec(name="b", after=("a",)))
    with pytest.raises(errors.RecipeInvalid, match="cycle"):
        walk.topological_order(cycle)
    with pytest.raises(errors.RecipeInvalid, match="unknown state nope"):
        walk.topological_order((desired.StateSpec(name="a", after=("nope",)),))


def test_the_gpu_recipe_shape_walks_to_ready_on_two_kernel_groups() -> None:
    recipe = states(
        "state-driver",
        "state-driver-validation",
        "state-device-plugin",
        "state-device-plugin-validation",
        ("state-monitoring", ["state-device-plugin-validation"]),
        ("state-feature-discovery", ["state-device-plugin-validation"]),
        ("state-grafana", ["state-monitoring"]),
    )
    nodes = ("a", "b", "c", "d", "e")
    groups = {"a": K1, "b": K1, "c": K2, "d": K2, "e": K2}
    objects = [
        obj("ServiceAccount", "driver", "state-driver"),
        ds("driver-k1", "state-driver", group=K1),
        ds("driver-k2", "state-driver", group=K2),
        *node_pods("driver-validation", "state-driver-validation", nodes),
        ds("plugin", "state-device-plugin"),
        *node_pods("plugin-validation", "state-device-plugin-validation", nodes),
        ds("exporter", "state-monitoring"),
        obj("Service", "exporter", "state-monitoring"),
        ds("gfd", "state-feature-discovery"),
        obj("ConfigMap", "dashboard", "state-grafana"),
        obj("Deployment", "grafana", "state-grafana"),
    ]
    world = World(desired=wanted(recipe, objects, nodes, groups=groups), nodes={n: node(n) for n in nodes})
    steps = world.settle()
    assert world.status["state"] == "Ready: 5/5 nodes"
    assert world.status["kernels"] == [
        {"kernel": K1.kernel, "os": "rhel9.4", "nodes": 2},
        {"kernel": K2.kernel, "os": "rhel9.4", "nodes": 3},
    ]
    assert all(n.labels.get("gpu.sro.dev/complete") == "true" for n in world.nodes.values())
    order = [ref.name for ref in world.created]
    assert order.index("driver-k1") < order.index("driver-validation-a") < order.index("plugin")
    assert order.index("plugin-validation-a") < order.index("exporter") < order.index("grafana")
    assert steps <= 2 * len(recipe) + 2  # each state takes a pass or two, nothing loops


def test_the_walk_notes_where_each_state_is_stuck_first_and_the_status_names_that_node() -> None:
    d = ds("d", "s")
    names = ["n1", "n2", "n3", "n4"]
    ready = {n: ds_pod(d, n, ready=False) for n in names}
    stuck = {
        n: ds_pod(d, n, ready=False, containers=(container(waiting_reason="ImagePullBackOff"),))
        for n in ("n2", "n4")
    }
    want = wanted(states("s"), [d], names)
    result = walk.walk(want, seen([node(n) for n in names], objects=[live(d)], pods=[*ready.values()]))
    assert result.by_name and result.stuck_first == {}
    assert result.first_waiting("s") == (4, "n1", result.nodes["n1"]["s"])
    pods = [stuck.get(n, pod) for n, pod in ready.items()]
    result = walk.walk(want, seen([node(n) for n in names], objects=[live(d)], pods=pods))
    assert result.stuck_first == {"s": "n2"}
    found = result.first_waiting("s")
    assert found is not None and found[:2] == (4, "n2") and found[2].stuck
    # The same answer as reading every node, which a walk built by hand does.
    by_hand = progress.Walk(order=result.order, nodes=result.nodes)
    assert by_hand.first_waiting("s") == found
