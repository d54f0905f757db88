"""Per-node state walking: where each selected node stands in each state of the recipe.

Each node walks the state graph on its own (contract section 5). A state is *Pending* on a
node while one of its ``after`` states is not complete there; otherwise it is *open* there
and is *Complete*, *Progressing* or *Failed* by the readiness of the objects that concern
the node: its per-node workloads (the DaemonSets placed on it — for kernel-affine copies,
the copy of the node's kernel group — and its own per-node pods) and the state's
cluster-wide objects. A state with no objects is complete as soon as it opens. Since every
phase is recomputed from what the cluster shows, a state that stops being complete makes
every later state Pending on that node again, which is what resets them. Nodes in
``reset`` (a kernel change, see ``lifecycle``) have every state Pending for this pass:
they start over.

What each object says of a node (its verdict) is ``sro.plan.judge``'s; what the walk
remembers of a node between passes, ``sro.plan.walk_memo``'s.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence

from sro import errors
from sro.model import desired, progress
from sro.plan import judge as judge_
from sro.plan import observed as observed_
from sro.plan import readiness, walk_memo, walk_touched

RESET_REASON = "kernel changed: the node walks the states again"


def topological_order(states: Sequence[desired.StateSpec]) -> tuple[str, ...]:
    """States with every ``after`` first; among ready ones, recipe order wins (stable)."""
    names = [s.name for s in states]
    known = set(names)
    for spec in states:
        for before in spec.after:
            if before not in known:
                raise errors.RecipeInvalid(f"state {spec.name} comes after unknown state {before}")
    done: list[str] = []
    placed: set[str] = set()
    remaining = list(states)
    while remaining:
        for spec in remaining:
            if all(a in placed for a in spec.after):
                done.append(spec.name)
                placed.add(spec.name)
                remaining.remove(spec)
                break
        else:
            cycle = ", ".join(s.name for s in remaining)
            raise errors.RecipeInvalid(f"the states' after edges form a cycle among: {cycle}")
    return tuple(done)


_COMPLETE = progress.NodeState(phase=progress.Phase.COMPLETE)  # frozen: one serves every node


def _combine(verdicts: Sequence[readiness.Verdict]) -> progress.NodeState:
    """The first failure; else the first stuck wait, or the first wait; else complete
    (one pass over the verdicts: the walk calls this for every state on every node)."""
    wait: readiness.Verdict | None = None
    for v in verdicts:
        outcome = v.outcome
        if outcome is readiness.Outcome.FAILED:
            return progress.NodeState(phase=progress.Phase.FAILED, reason=v.reason)
        if outcome is readiness.Outcome.WAITING and (wait is None or (v.stuck and not wait.stuck)):
            wait = v
    if wait is None:
        return _COMPLETE
    return progress.NodeState(phase=progress.Phase.PROGRESSING, reason=wait.reason, stuck=wait.stuck)


def walk(
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    *,
    reset: frozenset[str] = frozenset(),
    upgrading: frozenset[str] | None = None,
) -> progress.Walk:
    """Walk every selected node through the states; see the module docstring.

    ``upgrading`` None: only pods of the current template count anywhere."""
    order = topological_order(wanted.states)
    after = {s.name: s.after for s in wanted.states}
    indexed = judge_.index(wanted, seen.walk_memo.index)  # a render reused: indexed already
    refs = indexed.refs
    judge = judge_.Judge(wanted, seen, indexed, upgrading)
    logs: set[progress.LogRequest] = set()
    matched: dict[str, tuple[str, ...]] = {}
    nodes: dict[str, Mapping[str, progress.NodeState]] = {}
    pairs: list[tuple[str, progress.Phase]] = []  # (state, phase) of every node, counted at the end
    complete_nodes = 0
    stuck_first: dict[str, str] = {}  # state -> the first node by name where it is stuck
    # Frozen, so one of each serves every node: a reset, and a wait on each state.
    was_reset = progress.NodeState(phase=progress.Phase.PENDING, reason=RESET_REASON)
    waiting_for = {
        state: progress.NodeState(phase=progress.Phase.PENDING, reason=f"waiting for {state}")
        for state in order
    }
    complete = progress.Phase.COMPLETE
    pass_key = judge.pass_key(order)
    last = seen.walk_memo if seen.walk_memo.key == pass_key else walk_memo.EMPTY
    # The nodes the caches' news concerns (None: every node): any other keeps its key.
    rekey = walk_touched.to_key(last, seen, indexed) if last is not walk_memo.EMPTY else None
    held: dict[tuple[int, object], bool] = {}
    remembered: dict[str, walk_memo.Remembered] = {}
    for node in wanted.nodes:
        known = None
        if rekey is not None and node not in rekey:
            kept = last.nodes.get(node)
            if kept is not None and judge.outline_holds(kept.key, node, reset=node in reset, same=held):
                known = kept
        if known is None:
            key = judge.node_key(node, reset=node in reset)
            known = last.recall(node, key)
        if known is not None:  # nothing this node's walk reads changed since the last
            remembered[node] = known
            logs.update(known.logs)
            if known.matched:
                matched[node] = known.matched
            pairs.extend(known.phases)
            complete_nodes += known.complete
            if known.stuck:
                _note_stuck(stuck_first, node, known.stuck)
            nodes[node] = known.states  # read-only from here on: shared, not copied
            continue
        states: dict[str, progress.NodeState] = {}
        needed: list[progress.LogRequest] = []
        found: list[str] = []
        if node in reset:
            states = dict.fromkeys(order, was_reset)
        else:
            for state in order:
                blocked = next((a for a in after[state] if states[a].phase is not complete), None)
                if blocked is not None:
                    states[state] = waiting_for[blocked]
                    continue
                verdicts = judge.on_node(state, node)
                for verdict in verdicts:
                    if verdict.logs_needed:
                        needed.extend(verdict.logs_needed)
                    if verdict.matched:
                        found.extend(verdict.matched)
                states[state] = _combine(verdicts)
        logs.update(needed)
        uids = tuple(sorted(set(found)))
        if uids:
            matched[node] = uids
        remembered[node] = found_here = walk_memo.Remembered(
            key=key, states=states, logs=tuple(needed), matched=uids
        )
        pairs.extend(found_here.phases)
        complete_nodes += found_here.complete
        if found_here.stuck:
            _note_stuck(stuck_first, node, found_here.stuck)
        nodes[node] = states
    phases: dict[str, Counter[progress.Phase]] = {state: Counter() for state in order}
    for (state, phase), count in Counter(pairs).items():
        phases[state][phase] = count
    memo = walk_memo.Memo(
        objects=wanted.objects, key=pass_key, nodes=remembered, index=indexed, logs=seen.logs,
        answers=seen.node_answers, finished=seen.finished,
    )  # fmt: skip
    return progress.Walk(
        order=order, nodes=nodes, logs_needed=tuple(sorted(logs)), refs=refs, phases=phases, memo=memo,
        matched=matched, complete=complete_nodes, stuck_first=stuck_first,
        by_name=all(a < b for a, b in itertools.pairwise(wanted.nodes)),
    )  # fmt: skip


def _note_stuck(first: dict[str, str], node: str, states: tuple[str, ...]) -> None:
    for state in states:
        if state not in first or node < first[state]:
            first[state] = node
