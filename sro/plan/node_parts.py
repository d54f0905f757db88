"""Each node's part of a plan's writes, reused where the node's walk was recalled.

While a thousand nodes converge a pass comes every second or so, and in each most nodes
stand where they stood: their walk is recalled, not walked again (``walk_memo``). What a
node adds to the writes is its own per-node pods: those to make now, those to make once
this pass's label patch of the node has landed (``actions.Follower``), and those to
delete because their state is not open there any more. That reads only

* the node's walk (its phase in each state) and, through the walk's key, its own desired
  objects and the pods named for them (``judge.Judge.node_key``): the same ``Remembered``
  instance means all of these are as they were;
* the pods proven finished (``Observed.finished``), the same for every node;
* the node's cached record (its labels: a pod's ``after`` labels must be on the node
  first) and this pass's label change of it.

So a node whose walk was recalled, with the same record and the same change, gets last
pass's part again instead of going through its objects; any other node is computed as
before. The result is the same either way (``tests/unit/plan/test_walk_memo.py``: a plan
with the memo equals one without, pass after pass).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from sro.model import desired, progress, views
from sro.plan import actions, lifecycle, walk_memo
from sro.plan import observed as observed_

_PENDING = progress.NodeState(phase=progress.Phase.PENDING)
_NO_LABELS: Mapping[str, str | None] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class Part:
    """One node's part, and what it was computed from (``reads``: its record and label
    change, compared by identity first, then by value)."""

    walked: walk_memo.Remembered
    reads: tuple[object, ...]
    now: tuple[desired.DesiredObject, ...] = ()
    later: tuple[actions.Follower, ...] = ()
    closed: tuple[lifecycle.Deletion, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Parts:
    """Every node's part: the per-node objects to apply now and after the node patches,
    the per-node pods to delete, and each node's ``Part`` for the next plan."""

    now: tuple[desired.DesiredObject, ...]
    later: tuple[actions.Follower, ...]
    closed: tuple[lifecycle.Deletion, ...]
    memo: Mapping[str, Part]


def _missing(sr_name: str, labels: Mapping[str, str], states: tuple[str, ...]) -> tuple[str, ...]:
    """The ready labels of ``states`` that ``labels`` lacks."""
    keys = (lifecycle.state_label(sr_name, s) for s in states)
    return tuple(k for k in keys if labels.get(k) != lifecycle.READY_VALUE)


def made(seen: observed_.Observed, ref: desired.ObjectRef) -> bool:
    """Whether the pod ``ref`` exists, or succeeded and was collected since the last pass
    (``Observed.finished``: this pass records its state, it is not made again)."""
    return seen.pod(ref) is not None or ref in seen.finished


def _part(
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    walked: progress.Walk,
    *,
    node: str,
    objects: Sequence[desired.DesiredObject],
    states: Mapping[str, progress.NodeState],
    view: views.NodeView | None,
    coming: Mapping[str, str | None],
    after: Mapping[str, tuple[str, ...]],
) -> tuple[tuple[desired.DesiredObject, ...], tuple[actions.Follower, ...], tuple[lifecycle.Deletion, ...]]:
    now: list[desired.DesiredObject] = []
    later: list[actions.Follower] = []
    closed: list[lifecycle.Deletion] = []
    for obj in objects:
        here = states.get(obj.state, _PENDING)
        if not here.open:
            if obj.kind == "Pod":  # it runs again when its state reopens here
                ref = walked.ref(obj)
                pod = seen.pod(ref)
                if pod is not None and not pod.deleting:
                    why = lifecycle.why_closed(walked.order, states)
                    reason = f"{obj.state} is not open on {node}{why}: its pod runs again when it opens"
                    closed.append(lifecycle.Deletion(ref=ref, uid=pod.uid, reason=reason))
            continue
        if obj.kind == "Pod":
            if obj.wait and here.phase is progress.Phase.COMPLETE:
                # It ran there (the walk's record): not again, whether it is still there
                # or gone since. Asked first: most of a fleet's pods, once it walked.
                continue
            ref = walked.ref(obj)
            if made(seen, ref):
                continue  # made already, or succeeded and collected since the last pass
            if ref in seen.objects:
                continue  # a pod's spec is immutable: one that must change is deleted, then made again
        # Its labels come first: a pinned pod is refused by a node without them.
        missing = _missing(wanted.sr_name, view.labels if view else {}, after.get(obj.state, ()))
        if any(coming.get(k) != lifecycle.READY_VALUE for k in missing):
            continue
        if missing:
            later.append(actions.Follower(obj=obj, labels=missing))
        else:
            now.append(obj)
    return tuple(now), tuple(later), tuple(closed)


def parts(
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    walked: progress.Walk,
    *,
    setting: Mapping[str, Mapping[str, str | None]],
) -> Parts:
    """Every selected node's part (see the module docstring); ``setting``: this pass's
    label changes by node."""
    after = {s.name: s.after for s in wanted.states}
    memo = walked.memo if isinstance(walked.memo, walk_memo.Memo) else walk_memo.EMPTY
    last: Mapping[str, object] = seen.walk_memo.parts if seen.walk_memo.finished == seen.finished else {}
    now: list[desired.DesiredObject] = []
    later: list[actions.Follower] = []
    closed: list[lifecycle.Deletion] = []
    kept: dict[str, Part] = {}
    for node, objects in wanted.by_node.items():
        states = walked.nodes.get(node)
        view = seen.nodes.get(node)
        coming = setting.get(node, _NO_LABELS)
        # Walked nowhere: every state Pending there (its pods go, none is made).
        remembered = memo.nodes.get(node) if states is not None else None
        known = last.get(node)
        if (
            isinstance(known, Part)
            and remembered is not None
            and known.walked is remembered
            and known.reads == (view, coming)
        ):
            kept[node] = known
            found = (known.now, known.later, known.closed)
        else:
            found = _part(
                wanted, seen, walked, node=node, objects=objects, states=states or {}, view=view,
                coming=coming, after=after,
            )  # fmt: skip
            if remembered is not None:  # a node no walk remembers (one built by hand): nothing kept
                kept[node] = Part(
                    walked=remembered, reads=(view, coming), now=found[0], later=found[1], closed=found[2]
                )
        now.extend(found[0])
        later.extend(found[1])
        closed.extend(found[2])
    return Parts(now=tuple(now), later=tuple(later), closed=tuple(closed), memo=MappingProxyType(kept))
