"""A walk that reuses the last walk's memory finds what a walk from scratch finds, and
a plan that reuses the last plan's memory plans what a plan from scratch plans.

The memory only saves work: it must never change a verdict or a write. Randomised worlds
(``walk_memo_worlds``) are stepped the way a converging fleet steps; at every step the
walk with the memo must equal the walk without it, and a node whose inputs did not
change must be recalled, not walked again; the plan with the memo applies, follows and
deletes what a plan from scratch does, and an unchanged node's part of the writes
(``node_parts``) is reused. Also a kernel's DaemonSet's new revision and a kernel change:
only the nodes they concern are walked again. Renders interned against the memo, the
nodes' label, annotation and taint changes, and the caches' news each have their own
``test_walk_memo_*`` module.
"""

from __future__ import annotations

import random

import builders
import pytest
from builders import K1, K2, ds_pod, node
from walk_memo_worlds import (
    GROUPS,
    NODES,
    STEPS,
    _advance,
    _driver,
    _hand_edit,
    _observe,
    _patched,
    _recipe,
    _world,
)

from sro.model import desired, progress, views
from sro.plan import planner, walk, walk_memo

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("seed", range(12))
def test_a_walk_with_the_memo_equals_one_without(seed: int) -> None:
    rng = random.Random(seed)
    world = _world()
    memo = walk_memo.EMPTY
    recalled_total = 0
    want = _recipe(world)
    for _ in range(STEPS):
        want, reset = _advance(rng, want, world, memo)
        with_memo = walk.walk(want, _observe(want, world, memo), reset=reset)
        fresh = walk.walk(want, _observe(want, world, walk_memo.EMPTY), reset=reset)
        assert with_memo.nodes == fresh.nodes
        assert with_memo.logs_needed == fresh.logs_needed
        # The nodes complete in every state, counted while walking, as the status reads them.
        assert with_memo.complete == fresh.complete == sum(1 for n in NODES if fresh.all_complete(n))
        assert {s: dict(c) for s, c in with_memo.phases.items()} == {
            s: dict(c) for s, c in fresh.phases.items()
        }
        assert isinstance(with_memo.memo, walk_memo.Memo)
        recalled_total += sum(
            1 for n in NODES if memo.nodes.get(n) is not None and with_memo.memo.nodes[n] is memo.nodes[n]
        )
        memo = with_memo.memo
    assert recalled_total > 0, "unchanged nodes are recalled, not walked again"


def test_a_kernel_daemonsets_new_revision_walks_that_kernels_nodes_again_and_recalls_the_others() -> None:
    want = _recipe()
    world = _world()
    by_name = {o.ref.name: o for o in want.objects}
    pods: dict[str, views.PodView] = world["pods"]  # type: ignore[assignment]
    for n in NODES:
        pods[f"d-{n}"] = ds_pod(by_name["driver-k1" if GROUPS[n] is K1 else "driver-k2"], n)
    first = walk.walk(want, _observe(want, world, walk_memo.EMPTY))
    assert isinstance(first.memo, walk_memo.Memo)
    world["generations"] = {**world["generations"], "driver-k1": 2}  # type: ignore[dict-item]
    again = walk.walk(want, _observe(want, world, first.memo))
    assert isinstance(again.memo, walk_memo.Memo)
    recalled = {n for n in NODES if again.memo.nodes[n] is first.memo.nodes[n]}
    assert recalled == {n for n in NODES if GROUPS[n] is K2}
    assert again.nodes == walk.walk(want, _observe(want, world, walk_memo.EMPTY)).nodes
    stale = {n for n in NODES if "old template" in again.nodes[n]["state-driver"].reason}
    assert stale == {n for n in NODES if GROUPS[n] is K1}  # what the new revision changed, walked


def test_a_plan_after_a_kernel_change_walks_only_the_node_that_changed() -> None:
    world = _world()
    want = _recipe(world)
    pods: dict[str, views.PodView] = world["pods"]  # type: ignore[assignment]
    for n in NODES:
        pods[f"d-{n}"] = ds_pod(_driver(want, n), n)
    first = planner.plan(want, _observe(want, world, walk_memo.EMPTY), now=builders.T0)
    assert first.walk is not None and isinstance(first.walk.memo, walk_memo.Memo)
    world["groups"] = {**GROUPS, "n0": K1 if GROUPS["n0"] is K2 else K2}
    moved = _recipe(world)  # every object a new instance, as a new render makes them
    again = planner.plan(moved, _observe(moved, world, first.walk.memo), now=builders.T0)
    assert again.walk is not None and isinstance(again.walk.memo, walk_memo.Memo)
    walked = {n for n in NODES if again.walk.memo.nodes[n] is not first.walk.memo.nodes[n]}
    assert walked == {"n0"}
    scratch = planner.plan(moved, _observe(moved, world, walk_memo.EMPTY), now=builders.T0)
    assert again.apply == scratch.apply and again.node_labels == scratch.node_labels


@pytest.mark.parametrize("seed", range(12))
def test_a_plan_with_the_memo_equals_one_without_and_reuses_unchanged_nodes_parts(seed: int) -> None:
    """The whole plan, stepped as above with sro's patches landing on the nodes' records,
    an administrator's labels, and pods finished and collected: with the last plan's memory
    it applies, follows and deletes what a plan from scratch does, and a node whose walk,
    record and label change are as they were gets its part of the writes again
    (``node_parts``) instead of going through its objects."""
    rng = random.Random(seed)
    world = _world()
    # Half the worlds wait for no log line: the nodes' state labels are then in no walk's
    # key, and a node's record alone tells whether its validation pod waits for its label.
    world["plain"] = seed % 2 == 0
    nodes = {n: node(n) for n in NODES}
    memo = walk_memo.EMPTY
    reused = 0
    want = _recipe(world)
    for _ in range(STEPS):
        want, _ = _advance(rng, want, world, memo)
        if rng.random() < 0.3:
            _hand_edit(rng, nodes)
        finished: frozenset[desired.ObjectRef] = frozenset()
        pods: dict[str, views.PodView] = world["pods"]  # type: ignore[assignment]
        if rng.random() < 0.2:  # a validation pod that succeeded is collected
            done = [k for k, p in pods.items() if k.startswith("v-") and p.phase == "Succeeded"]
            if done:
                gone = pods.pop(rng.choice(done))
                finished = frozenset(
                    {
                        desired.ObjectRef(
                            api_version="v1", kind="Pod", namespace=gone.namespace, name=gone.name
                        )
                    }
                )
        kept = _observe(want, world, memo, nodes, finished=finished)
        with_memo = planner.plan(want, kept, now=builders.T0)
        scratch = _observe(want, world, walk_memo.EMPTY, nodes, finished=finished)
        fresh = planner.plan(want, scratch, now=builders.T0)
        assert [o.ref for o in with_memo.apply] == [o.ref for o in fresh.apply]
        assert with_memo.follow == fresh.follow
        deleted = [(d.ref, d.uid, d.reason) for d in with_memo.delete]
        assert deleted == [(d.ref, d.uid, d.reason) for d in fresh.delete]
        assert with_memo.node_labels == fresh.node_labels
        assert isinstance(with_memo.walk, progress.Walk) and isinstance(with_memo.walk.memo, walk_memo.Memo)
        parts = with_memo.walk.memo.parts
        reused += sum(1 for n in NODES if memo.parts.get(n) is not None and parts.get(n) is memo.parts[n])
        memo = with_memo.walk.memo
        for change in with_memo.node_labels:
            if rng.random() < 0.7:  # most patches land before the next pass
                nodes[change.node] = _patched(nodes[change.node], change)
    assert reused > 0, "an unchanged node's part is reused, not computed again"


def test_nodes_that_stand_alike_share_one_tuple_of_phases() -> None:
    # Kept for every node pass after pass: a fleet stands in a few ways, not one per node.
    def remembered(node: str, plugin: progress.Phase) -> walk_memo.Remembered:
        states = {
            "driver": progress.NodeState(phase=progress.Phase.COMPLETE),
            "plugin": progress.NodeState(phase=plugin),
        }
        return walk_memo.Remembered(key=(node,), states=states, logs=())

    a, b = remembered("n1", progress.Phase.PENDING), remembered("n2", progress.Phase.PENDING)
    assert a.phases == (("driver", progress.Phase.COMPLETE), ("plugin", progress.Phase.PENDING))
    assert a.phases is b.phases
    assert remembered("n3", progress.Phase.COMPLETE).phases != a.phases
    assert remembered("n3", progress.Phase.COMPLETE).complete and not a.complete
