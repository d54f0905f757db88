"""A walk that reuses the last walk's memory finds what a walk from scratch finds.

Randomised worlds stepped the way a converging fleet steps: pods appear, become ready,
fail, are replaced; log tails arrive; nodes are reset; one DaemonSet's template moves on.
At every step the walk with the memo must equal the walk without it, and a node whose
inputs did not change must be recalled, not walked again; the same holds for each node's
label, annotation and taint change (``lifecycle.node_changes``), with the nodes' records
changing as sro's patches, an administrator and the SpecialResource's taints change them.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator

import pytest
from builders import K1, K2, SR, bare_pod, ds, ds_pod, live, node, node_pods, obj, seen, states, wanted

from sro.model import desired, views
from sro.plan import lifecycle, node_patches, observed, walk, walk_memo

NODES = [f"n{i}" for i in range(8)]
GROUPS = {n: (K1 if i % 2 else K2) for i, n in enumerate(NODES)}
DAEMONSETS = ("driver-k1", "driver-k2", "plugin")
CHANGES = ("driver", "driver-ready", "log", "validate", "validate-done", "plugin", "gone", "reset")


def _recipe() -> desired.DesiredState:
    driver_k1 = ds("driver-k1", "state-driver", group=K1, logs="driver loaded")
    driver_k2 = ds("driver-k2", "state-driver", group=K2, logs="driver loaded")
    validate = node_pods("validate", "state-validation", NODES)
    plugin = ds("plugin", "state-plugin")
    config = obj("ConfigMap", "settings", "state-plugin")
    return wanted(
        states("state-driver", "state-validation", "state-plugin"),
        [driver_k1, driver_k2, *validate, plugin, config],
        NODES,
        groups=GROUPS,
    )


def _step(rng: random.Random, want: desired.DesiredState, world: dict[str, object]) -> None:
    """Change a few things, as one second of a converging fleet would."""
    pods: dict[str, views.PodView] = world["pods"]  # type: ignore[assignment]
    logs: dict[str, dict[str, str]] = world["logs"]  # type: ignore[assignment]
    by_name = {o.ref.name: o for o in want.objects}
    for _ in range(rng.randint(0, 4)):
        n = rng.choice(NODES)
        what = rng.choice(
            ("driver", "driver-ready", "log", "validate", "validate-done", "plugin", "gone", "reset")
        )
        driver = by_name["driver-k1" if GROUPS[n] is K1 else "driver-k2"]
        generations: dict[str, int] = world["generations"]  # type: ignore[assignment]
        generation = generations[driver.ref.name]
        if what == "driver":
            pods[f"d-{n}"] = ds_pod(driver, n, ready=False, generation=generation)
        elif what == "driver-ready":
            pods[f"d-{n}"] = ds_pod(driver, n, ready=True, generation=generation)
        elif what == "log":
            logs[ds_pod(driver, n, generation=generation).uid] = {
                "main": rng.choice(("...", "driver loaded"))
            }
        elif what == "validate":
            pods[f"v-{n}"] = bare_pod(by_name[f"validate-{n}"], phase="Running")
        elif what == "validate-done":
            pods[f"v-{n}"] = bare_pod(by_name[f"validate-{n}"], phase=rng.choice(("Succeeded", "Failed")))
        elif what == "plugin":
            plugin = by_name["plugin"]
            pods[f"p-{n}"] = ds_pod(plugin, n, ready=rng.random() < 0.7, generation=generations["plugin"])
        elif what == "gone":
            pods.pop(rng.choice([k for k in pods if k.endswith(n)] or [""]), None)
        else:
            world["reset"] = frozenset(rng.sample(NODES, rng.randint(0, 2)))
    if rng.random() < 0.1:  # one DaemonSet's template moves on: only its nodes read anything new
        generations = world["generations"]  # type: ignore[assignment]
        generations[rng.choice(sorted(generations))] += 1


def _world() -> dict[str, object]:
    return {"pods": {}, "logs": {}, "reset": frozenset(), "generations": dict.fromkeys(DAEMONSETS, 1)}


def _steps(
    rng: random.Random, want: desired.DesiredState, world: dict[str, object], *, count: int = 40
) -> Iterator[frozenset[str]]:
    """Step ``world`` ``count`` times (``_step``), yielding the nodes reset at each step."""
    for _ in range(count):
        _step(rng, want, world)
        reset = world["reset"]
        assert isinstance(reset, frozenset)
        yield reset


def _observe(
    want: desired.DesiredState,
    world: dict[str, object],
    memo: walk_memo.Memo,
    nodes: dict[str, views.NodeView] | None = None,
    taints: tuple[views.Taint, ...] = (),
) -> observed.Observed:
    generations: dict[str, int] = world["generations"]  # type: ignore[assignment]
    lives = [
        live(o, generation=generations[o.ref.name]) if o.kind == "DaemonSet" else live(o)
        for o in want.objects
        if o.node is None
    ]
    logs = {uid: dict(tails) for uid, tails in world["logs"].items()}  # type: ignore[attr-defined]
    return seen(
        [node(n) for n in NODES] if nodes is None else nodes.values(),
        objects=lives,
        pods=world["pods"].values(),  # type: ignore[attr-defined]
        logs=logs,
        walk_memo=memo,
        taints=taints,
    )


@pytest.mark.parametrize("seed", range(12))
def test_a_walk_with_the_memo_equals_one_without(seed: int) -> None:
    rng = random.Random(seed)
    want = _recipe()
    world = _world()
    memo = walk_memo.EMPTY
    recalled_total = 0
    for reset in _steps(rng, want, world):
        with_memo = walk.walk(want, _observe(want, world, memo), reset=reset)
        fresh = walk.walk(want, _observe(want, world, walk_memo.EMPTY), reset=reset)
        assert with_memo.nodes == fresh.nodes
        assert with_memo.logs_needed == fresh.logs_needed
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


def test_other_objects_make_the_memo_unusable() -> None:
    want = _recipe()
    first = walk.walk(want, _observe(want, _world(), walk_memo.EMPTY))
    assert isinstance(first.memo, walk_memo.Memo)
    copied = dataclasses.replace(want, objects=tuple(dataclasses.replace(o) for o in want.objects))
    assert first.memo.usable(want.objects, first.memo.key)
    assert not first.memo.usable(copied.objects, first.memo.key)


TAINT = views.Taint(key="example.com/gpu", value="", effect="NoSchedule")


def _patched(view: views.NodeView, change: node_patches.NodeChange) -> views.NodeView:
    """``view`` after sro's patch of ``change`` landed (a new record, as the cache keeps)."""
    labels = {k: v for k, v in {**view.labels, **change.labels}.items() if v is not None}
    annotations = {k: v for k, v in {**view.annotations, **change.annotations}.items() if v is not None}
    patch = node_patches.for_change(view, change, sr_name=SR)
    taints = view.taints
    if patch is not None and "spec" in patch:
        taints = tuple(views.Taint(**t) for t in patch["spec"]["taints"])
        annotations.update({k: v for k, v in patch["metadata"]["annotations"].items() if v is not None})
    return dataclasses.replace(view, labels=labels, annotations=annotations, taints=taints)


@pytest.mark.parametrize("seed", range(12))
def test_node_changes_with_the_memo_equal_those_without(seed: int) -> None:
    rng = random.Random(seed)
    want = _recipe()
    world = _world()
    nodes = {n: node(n) for n in NODES}
    taints: tuple[views.Taint, ...] = ()
    memo = walk_memo.EMPTY
    reused = 0
    for reset in _steps(rng, want, world):
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
