"""Pods that succeeded and then went: they count, and are not made again.

The pod garbage collector may take a finished pod, or someone else delete it, before or
after a pass saw it succeed; running it again would repeat a validation (or a
cluster-wide setup) that already passed. Covers a collected pod (per-node or
cluster-wide) resetting nothing; the cache's log of pods gone after they succeeded
(``Observed.finished``) proving one ran that no pass saw succeed, handed on until the
node's label records it and dropped once the node is reset; a pod being deleted
(counts only if it succeeded); a pod gone unseen and unlogged, which runs again.

Driven through ``World`` (builders), an in-memory stand-in for the cluster between
reconciles.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import (
    LINEAR,
    NODES,
    NS,
    World,
    _collected,
    ds,
    gpu_objects,
    label,
    labels_of,
    linear_world,
    node,
    node_pods,
    obj,
    wanted,
)

from sro.model import desired
from sro.plan import planner

pytestmark = pytest.mark.unit


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
