"""A walk that reuses the last walk's memory finds what a walk from scratch finds.

Randomised worlds stepped the way a converging fleet steps: pods appear, become ready,
fail, are replaced; log tails arrive; nodes are reset; one DaemonSet's template moves on;
the recipe is rendered again (new instances, interned or not), with a node's kernel
changed, one node's own pod edited or one kernel's driver waiting for another line. At
every step the walk with the memo must equal the walk without it, and a node whose
inputs did not change must be recalled, not walked again; the same holds for each node's
label, annotation and taint change (``lifecycle.node_changes``), with the nodes' records
changing as sro's patches, an administrator and the SpecialResource's taints change them.
"""

from __future__ import annotations

import dataclasses
import random

import builders
import pytest
from builders import K1, K2, SR, bare_pod, ds, ds_pod, live, node, node_pods, obj, seen, states, wanted

from sro.model import desired, progress, views
from sro.plan import judge, lifecycle, node_patches, observed, planner, walk, walk_memo

pytestmark = pytest.mark.unit

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


def _touched(
    pods_then: dict[str, views.PodView],
    pods: dict[str, views.PodView],
    nodes_then: dict[str, views.NodeView],
    nodes: dict[str, views.NodeView],
) -> walk_memo.Touched:
    """What the stores' journal says changed between two passes' caches: every record
    replaced, added or gone, and for pods the nodes they ran on before and after."""
    moved = [
        p
        for k in pods_then.keys() | pods.keys()
        if pods_then.get(k) is not pods.get(k)
        for p in (pods_then.get(k), pods.get(k))
        if p is not None
    ]
    return walk_memo.Touched(
        nodes=frozenset(n for n in nodes_then.keys() | nodes.keys() if nodes_then.get(n) is not nodes.get(n)),
        pods=frozenset((p.namespace, p.name) for p in moved),
        pod_nodes=frozenset(p.node for p in moved if p.node),
    )


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


@pytest.mark.parametrize("seed", range(12))
def test_a_walk_told_what_the_caches_changed_keys_fewer_nodes_and_finds_the_same(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As ``test_a_walk_with_the_memo_equals_one_without``, with the caches' news
    (``Observed.touched``), sro's patches landing on the nodes' records, an administrator's
    labels, and node answers (what sro's last patches returned) coming and going."""
    rng = random.Random(seed)
    world = _world()
    nodes = {n: node(n) for n in NODES}
    answers: dict[str, observed.NodeAnswer] = {}
    keyed: list[str] = []
    node_key = judge.Judge.node_key

    def counted(self: judge.Judge, n: str, *, reset: bool) -> walk_memo.NodeKey:
        keyed.append(n)
        return node_key(self, n, reset=reset)

    monkeypatch.setattr(judge.Judge, "node_key", counted)
    memo = walk_memo.EMPTY
    pods_then: dict[str, views.PodView] = {}
    nodes_then: dict[str, views.NodeView] = {}
    skipped = 0
    want = _recipe(world)
    for _ in range(STEPS):
        want, reset = _advance(rng, want, world, memo)
        if rng.random() < 0.3:
            _hand_edit(rng, nodes)
        if rng.random() < 0.2:  # a node's own pod made again, not scheduled yet: found by its name
            n = rng.choice(NODES)
            own = next(o for o in want.objects if o.ref.name == f"validate-{n}")
            world["pods"][f"v-{n}"] = dataclasses.replace(bare_pod(own, phase="Pending"), node="")  # type: ignore[index]
        if rng.random() < 0.3:  # sro's last patch of a node returned, or is forgotten
            n = rng.choice(NODES)
            if rng.random() < 0.3:
                answers.pop(n, None)
            else:
                ready = {builders.label(s): "ready" for s in ("state-driver", "state-validation")}
                answers[n] = observed.NodeAnswer(version=rng.randint(0, 2), labels=ready)
        pods: dict[str, views.PodView] = dict(world["pods"])  # type: ignore[call-overload]
        news = _touched(pods_then, pods, nodes_then, nodes)
        told = _observe(want, world, memo, nodes, touched=news, kept_logs=True, node_answers=dict(answers))
        keyed.clear()
        walked = walk.walk(want, told, reset=reset)
        skipped += len(NODES) - len(keyed)
        with_news = lifecycle.node_changes(want, told, walked)
        scratch = _observe(want, world, walk_memo.EMPTY, nodes, node_answers=dict(answers))
        fresh = walk.walk(want, scratch, reset=reset)
        assert walked.nodes == fresh.nodes
        assert walked.logs_needed == fresh.logs_needed and walked.matched == fresh.matched
        assert with_news.changes == lifecycle.node_changes(want, scratch, fresh).changes
        memo = with_news.memo
        pods_then, nodes_then = pods, dict(nodes)
        for change in with_news.changes:
            if rng.random() < 0.7:  # most patches land before the next pass
                nodes[change.node] = _patched(nodes[change.node], change)
    assert skipped > 0, "a node no news concerns is recalled without building its key"


def test_a_node_whose_record_alone_changed_is_walked_again_when_the_news_names_it() -> None:
    """A validation pod that succeeded and was collected counts while its node carries the
    state's label; an administrator removing the label runs it again (``judge``). Only the
    node record changed: the news names that node, and only that node is keyed again."""
    world = _world()
    want = _recipe(world)
    done = {builders.label("state-driver"): "ready", builders.label("state-validation"): "ready"}
    annotation = {lifecycle.logs_annotation(SR): " ".join(f"uid-d-{n}" for n in NODES)}
    pods: dict[str, views.PodView] = world["pods"]  # type: ignore[assignment]
    for n in NODES:
        pods[f"d-{n}"] = ds_pod(_driver(want, n), n, uid=f"uid-d-{n}")
    nodes = {n: node(n, done, annotations=annotation) for n in NODES}
    first = walk.walk(want, _observe(want, world, walk_memo.EMPTY, nodes))
    assert isinstance(first.memo, walk_memo.Memo)
    assert all(first.nodes[n]["state-validation"].phase is progress.Phase.COMPLETE for n in NODES)
    nodes["n2"] = dataclasses.replace(nodes["n2"], labels={builders.label("state-driver"): "ready"})
    news = walk_memo.Touched(nodes=frozenset({"n2"}))
    again = walk.walk(want, _observe(want, world, first.memo, nodes, touched=news))
    assert isinstance(again.memo, walk_memo.Memo)
    assert again.nodes == walk.walk(want, _observe(want, world, walk_memo.EMPTY, nodes)).nodes
    assert again.nodes["n2"]["state-validation"].phase is not progress.Phase.COMPLETE
    assert {n for n in NODES if again.memo.nodes[n] is not first.memo.nodes[n]} == {"n2"}


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
