"""Each node's label, annotation and taint change (``lifecycle.node_changes``) with the
walk's memory equals the change computed from scratch.

Randomised worlds (``walk_memo_worlds``) with the nodes' records changing as sro's
patches, an administrator and the SpecialResource's taints change them: at every step
the changes with the memo must equal those without it, and an unchanged node's change
must be reused, not computed again. Also a node moved to another kernel group that walks
alike: its new group is annotated all the same.
"""

from __future__ import annotations

import dataclasses
import random

import builders
import pytest
from builders import K1, K2, SR, ds, ds_pod, live, node, seen, states, wanted
from walk_memo_worlds import NODES, STEPS, _advance, _observe, _patched, _recipe, _world

from sro.model import desired, views
from sro.plan import lifecycle, walk, walk_memo

pytestmark = pytest.mark.unit

TAINT = views.Taint(key="example.com/gpu", value="", effect="NoSchedule")


@pytest.mark.parametrize("seed", range(12))
def test_node_changes_with_the_memo_equal_those_without(seed: int) -> None:
    rng = random.Random(seed)
    world = _world()
    nodes = {n: node(n) for n in NODES}
    taints: tuple[views.Taint, ...] = ()
    memo = walk_memo.EMPTY
    reused = 0
    want = _recipe(world)
    for _ in range(STEPS):
        want, reset = _advance(rng, want, world, memo)
        if rng.random() < 0.1:
            taints = () if taints else (TAINT,)  # the SpecialResource's taints edited
        if rng.random() < 0.2:  # an administrator's label on one node
            n = rng.choice(NODES)
            nodes[n] = dataclasses.replace(nodes[n], labels={**nodes[n].labels, "team": str(rng.random())})
        kept = _observe(want, world, memo, nodes, taints)
        walked = walk.walk(want, kept, reset=reset)
        with_memo = lifecycle.node_changes(want, kept, walked)
        scratch = _observe(want, world, walk_memo.EMPTY, nodes, taints)
        fresh = lifecycle.node_changes(want, scratch, walk.walk(want, scratch, reset=reset))
        assert with_memo.changes == fresh.changes
        reused += sum(1 for n in NODES if memo.changes.get(n) is with_memo.memo.changes.get(n) is not None)
        memo = with_memo.memo
        for change in with_memo.changes:
            if rng.random() < 0.7:  # most patches land before the next pass
                nodes[change.node] = _patched(nodes[change.node], change)
    assert reused > 0, "an unchanged node's change is reused, not computed again"


def test_a_node_moved_to_another_kernel_group_gets_its_new_group_annotated_even_when_it_walks_alike() -> None:
    groups = {"n0": K1, "n1": K1}
    plugin = states("state-plugin")

    def render(kernels: dict[str, desired.KernelGroup]) -> desired.DesiredState:
        return wanted(plugin, [ds("plugin", "state-plugin")], groups, groups=kernels)

    want = render(groups)
    pods = [ds_pod(want.objects[0], n) for n in groups]
    annotation = lifecycle.kernel_annotation(SR)
    nodes = [
        node(n, {builders.label("state-plugin"): "ready"}, annotations={annotation: K1.key}) for n in groups
    ]
    first = seen(nodes, objects=[live(want.objects[0])], pods=pods)
    walked = walk.walk(want, first)
    before = lifecycle.node_changes(want, first, walked)
    assert not [c for c in before.changes if annotation in c.annotations]
    moved = walk_memo.interned(render({**groups, "n0": K2}), before.memo)
    again = dataclasses.replace(first, walk_memo=before.memo)
    changes = lifecycle.node_changes(moved, again, walk.walk(moved, again)).changes
    assert [(c.node, c.annotations[annotation]) for c in changes if annotation in c.annotations] == [
        ("n0", K2.key)
    ]
