"""A new render interned against the walk's memory: only the nodes whose own objects
changed are walked again.

A render makes new instances of every object, equal or not to the last ones; the memo
recognises a node's inputs by identity, so the planner interns a render against it
(``walk_memo.interned``): unchanged objects are replaced by the last instances, the same
render handed again gets the same interned render at once. Covers that, and a walk after
a kernel change and an edited per-node pod, interned or with equal copies, walking only
the two nodes concerned.
"""

from __future__ import annotations

import pytest
from builders import K1, K2, ds_pod
from walk_memo_worlds import GROUPS, NODES, _driver, _observe, _recipe, _world

from sro.model import views
from sro.plan import walk, walk_memo

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("intern", [True, False], ids=["interned", "equal-copies"])
def test_a_new_render_walks_only_the_nodes_whose_own_objects_changed(intern: bool) -> None:
    world = _world()
    want = _recipe(world)
    pods: dict[str, views.PodView] = world["pods"]  # type: ignore[assignment]
    for n in NODES:
        pods[f"d-{n}"] = ds_pod(_driver(want, n), n)
    first = walk.walk(want, _observe(want, world, walk_memo.EMPTY))
    assert isinstance(first.memo, walk_memo.Memo)
    world["groups"] = {**GROUPS, "n0": K1 if GROUPS["n0"] is K2 else K2}  # n0 boots the other kernel
    world["edited"] = frozenset({"n3"})  # n3's validation pod is rendered differently
    fresh = _recipe(world)
    again_want = walk_memo.interned(fresh, first.memo) if intern else fresh
    kept = {i for i, o in enumerate(again_want.objects) if o is want.objects[i]}
    edited = next(i for i, o in enumerate(fresh.objects) if o.ref.name == "validate-n3")
    assert kept == (set(range(len(want.objects))) - {edited} if intern else set())
    again = walk.walk(again_want, _observe(again_want, world, first.memo))
    assert isinstance(again.memo, walk_memo.Memo)
    recalled = {n for n in NODES if again.memo.nodes[n] is first.memo.nodes[n]}
    assert recalled == set(NODES) - {"n0", "n3"}
    assert again.nodes == walk.walk(again_want, _observe(again_want, world, walk_memo.EMPTY)).nodes
    assert "old template" not in again.nodes["n0"]["state-driver"].reason  # its new group's pod: none yet
    assert again.nodes["n0"]["state-driver"] != first.nodes["n0"]["state-driver"]


def test_interning_keeps_the_last_instances_of_unchanged_objects_only() -> None:
    world = _world()
    want = _recipe(world)
    last = walk_memo.Memo(objects=want.objects)
    assert walk_memo.interned(want, walk_memo.EMPTY) is want  # nothing walked before
    assert walk_memo.interned(want, last) is want  # the render reused
    assert walk_memo.same(walk_memo.interned(_recipe(world), last).objects, want.objects)
    world["edited"] = frozenset({"n1"})
    again = walk_memo.interned(_recipe(world), last)
    changed = [o.ref.name for o, before in zip(again.objects, want.objects, strict=True) if o is not before]
    assert changed == ["validate-n1"]


def test_the_same_render_handed_again_gets_the_same_interned_render_at_once() -> None:
    world = _world()
    want = _recipe(world)
    handed = _recipe(world)  # equal, other instances: rendered anew from the same inputs
    kept = walk_memo.interned(handed, walk_memo.Memo(objects=want.objects))
    assert kept is not handed and walk_memo.same(kept.objects, want.objects)
    memo = walk_memo.Memo(objects=want.objects, render=(handed, kept))
    assert walk_memo.interned(handed, memo) is kept
    assert walk_memo.interned(_recipe(world), memo) is not kept  # another render: interned anew
    assert walk_memo.same(walk_memo.interned(_recipe(world), memo).objects, want.objects)
