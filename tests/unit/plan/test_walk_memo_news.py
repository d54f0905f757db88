"""A walk told what the caches changed since the last pass (``Observed.touched``) keys
only the nodes the news concerns, and finds what a walk from scratch finds.

Building every node's key every pass was itself a third of the walk at a thousand nodes;
the stores' journal says which records were replaced, added or gone. Randomised worlds
(``walk_memo_worlds``) with sro's patches landing on the nodes' records, an
administrator's labels, pods made again before they are scheduled, and node answers
coming and going: the walk and the node changes must equal those from scratch, and some
nodes must be recalled without building their key. Also a node whose record alone
changed: the news names it, and only it is walked again.
"""

from __future__ import annotations

import dataclasses
import random

import builders
import pytest
from builders import SR, bare_pod, ds_pod, node
from walk_memo_worlds import NODES, STEPS, _advance, _driver, _hand_edit, _observe, _patched, _recipe, _world

from sro.model import progress, views
from sro.plan import judge, lifecycle, observed, walk, walk_memo

pytestmark = pytest.mark.unit


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
