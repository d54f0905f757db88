"""Randomised worlds for the walk-memo tests (``test_walk_memo*``): a fleet converging.

Each step changes what one second of a converging fleet would: pods appear, become
ready, fail, are replaced; log tails arrive; nodes are reset; one DaemonSet's template
moves on; the recipe is rendered again (new instances, interned or not), with a node's
kernel changed, one node's own pod edited or one kernel's driver waiting for another
line. ``_patched`` lands sro's patch on a node's record and ``_hand_edit`` is an
administrator's, so that the nodes' records change as they do in a cluster. The worlds
are plain values: each test observes the same world twice, with the memo and without.
"""

from __future__ import annotations

import dataclasses
import random

from builders import K1, K2, SR, bare_pod, ds, ds_pod, live, node, node_pods, obj, seen, states, wanted

from sro.model import desired, views
from sro.plan import node_patches, observed, walk_memo

NODES = [f"n{i}" for i in range(8)]
GROUPS = {n: (K1 if i % 2 else K2) for i, n in enumerate(NODES)}
DAEMONSETS = ("driver-k1", "driver-k2", "plugin")
STEPS = 40  # passes per randomised world
CHANGES = ("driver", "driver-ready", "log", "validate", "validate-done", "plugin", "gone", "reset")


def _recipe(world: dict[str, object] | None = None) -> desired.DesiredState:
    """A render of the recipe for ``world``'s kernel groups and edits: new instances each time."""
    groups: dict[str, desired.KernelGroup] = world["groups"] if world else GROUPS  # type: ignore[assignment]
    edited: frozenset[str] = world["edited"] if world else frozenset()  # type: ignore[assignment]
    pattern = str(world["pattern"]) if world else "driver loaded"
    plain = bool(world and world.get("plain"))  # no driver waits for a log line
    driver_k1 = ds("driver-k1", "state-driver", group=K1, logs=None if plain else pattern)
    driver_k2 = ds("driver-k2", "state-driver", group=K2, logs=None if plain else "driver loaded")
    validate = [
        dataclasses.replace(o, body={**o.body, "spec": {"edited": True}}) if o.node in edited else o
        for o in node_pods("validate", "state-validation", NODES)
    ]
    plugin = ds("plugin", "state-plugin")
    config = obj("ConfigMap", "settings", "state-plugin")
    return wanted(
        states("state-driver", "state-validation", "state-plugin"),
        [driver_k1, driver_k2, *validate, plugin, config],
        NODES,
        groups=groups,
    )


def _driver(want: desired.DesiredState, n: str) -> desired.DesiredObject:
    name = "driver-k1" if want.kernel_groups[n] is K1 else "driver-k2"
    return next(o for o in want.objects if o.ref.name == name)


def _step(rng: random.Random, want: desired.DesiredState, world: dict[str, object]) -> None:
    """Change a few things, as one second of a converging fleet would."""
    pods: dict[str, views.PodView] = world["pods"]  # type: ignore[assignment]
    logs: dict[str, dict[str, str]] = world["logs"]  # type: ignore[assignment]
    by_name = {o.ref.name: o for o in want.objects}
    for _ in range(rng.randint(0, 4)):
        n = rng.choice(NODES)
        what = rng.choice(CHANGES)
        driver = _driver(want, n)
        generations: dict[str, int] = world["generations"]  # type: ignore[assignment]
        generation = generations[driver.ref.name]
        if what == "driver":
            pods[f"d-{n}"] = ds_pod(driver, n, ready=False, generation=generation)
        elif what == "driver-ready":
            pods[f"d-{n}"] = ds_pod(driver, n, ready=True, generation=generation)
        elif what == "log":
            logs[ds_pod(driver, n, generation=generation).uid] = {
                "main": rng.choice(("...", "driver loaded", "module loaded"))
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
    roll = rng.random()
    if roll < 0.1:  # a node boots another kernel: it moves to the other group's DaemonSet
        groups: dict[str, desired.KernelGroup] = world["groups"]  # type: ignore[assignment]
        n = rng.choice(NODES)
        groups[n] = K2 if groups[n] is K1 else K1
    elif roll < 0.15:  # one node's own pod is rendered differently
        world["edited"] = world["edited"] ^ {rng.choice(NODES)}  # type: ignore[operator]
    elif roll < 0.2:  # one kernel's driver waits for another line: its nodes judge it anew
        world["pattern"] = "loaded" if world["pattern"] == "driver loaded" else "driver loaded"


def _world() -> dict[str, object]:
    return {
        "pods": {}, "logs": {}, "reset": frozenset(), "generations": dict.fromkeys(DAEMONSETS, 1),
        "groups": dict(GROUPS), "edited": frozenset(), "pattern": "driver loaded",
    }  # fmt: skip


def _rendered(
    rng: random.Random, want: desired.DesiredState, world: dict[str, object], memo: walk_memo.Memo
) -> desired.DesiredState:
    """``want``, or sometimes (always when the world's groups or edits moved on) a new
    render, interned against ``memo`` as the planner does or, now and then, not."""
    fresh = _recipe(world)
    if fresh == want and rng.random() < 0.8:
        return want  # the render reused
    return walk_memo.interned(fresh, memo) if rng.random() < 0.7 else fresh


def _advance(
    rng: random.Random, want: desired.DesiredState, world: dict[str, object], memo: walk_memo.Memo
) -> tuple[desired.DesiredState, frozenset[str]]:
    """Step ``world`` once (``_step``): the render the next pass plans with (``_rendered``)
    and the nodes reset."""
    _step(rng, want, world)
    reset = world["reset"]
    assert isinstance(reset, frozenset)
    return _rendered(rng, want, world, memo), reset


def _observe(
    want: desired.DesiredState,
    world: dict[str, object],
    memo: walk_memo.Memo,
    nodes: dict[str, views.NodeView] | None = None,
    taints: tuple[views.Taint, ...] = (),
    **kw: object,
) -> observed.Observed:
    generations: dict[str, int] = world["generations"]  # type: ignore[assignment]
    lives = [
        live(o, generation=generations[o.ref.name]) if o.kind == "DaemonSet" else live(o)
        for o in want.objects
        if o.node is None
    ]
    # Each pod's tails as the engine keeps them (replaced when read again), or copies.
    kept: dict[str, dict[str, str]] = world["logs"]  # type: ignore[assignment]
    logs = dict(kept) if kw.pop("kept_logs", False) else {uid: dict(tails) for uid, tails in kept.items()}
    return seen(
        [node(n) for n in NODES] if nodes is None else nodes.values(),
        objects=lives,
        pods=world["pods"].values(),  # type: ignore[attr-defined]
        logs=logs,
        walk_memo=memo,
        taints=taints,
        **kw,
    )


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


def _hand_edit(rng: random.Random, nodes: dict[str, views.NodeView]) -> None:
    """An administrator's label on one node, or one of sro's labels or annotations taken off."""
    n = rng.choice(NODES)
    labels, annotations = dict(nodes[n].labels), dict(nodes[n].annotations)
    ours = [k for k in (*labels, *annotations) if SR in k]
    if ours and rng.random() < 0.6:
        gone = rng.choice(ours)
        labels.pop(gone, None)
        annotations.pop(gone, None)
    else:
        labels["team"] = str(rng.random())
    nodes[n] = dataclasses.replace(nodes[n], labels=labels, annotations=annotations)
