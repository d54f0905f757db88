"""Which proofs of per-node pods gone since they succeeded the next pass still needs.

A pod that succeeded and was collected before any pass saw it succeed is proven run by
the cache's log of pods gone (``Observed.finished``, read once). The pass that reads it
records the proof as the state's ready label on the node; until that label is seen
(a pass carries at most ``planner.PASS_WRITES`` node changes, a patch may fail), the
proof must be handed on, or the next pass would make the pod and run it again. It is
dropped as soon as it is no longer true for the node: its state is Pending there (a
kernel change reset the node, a replaced driver closed the later states), the pod is no
longer desired, or the label records it.
"""

from __future__ import annotations

from sro.model import desired, progress
from sro.plan import judge
from sro.plan import observed as observed_


def still_needed(
    wanted: desired.DesiredState, seen: observed_.Observed, walked: progress.Walk
) -> frozenset[desired.ObjectRef]:
    """The refs of ``seen.finished`` to hand the next pass (``Plan.finished``)."""
    if not seen.finished:
        return frozenset()
    by_ref = {walked.ref(o): o for o in wanted.objects if o.kind == "Pod" and o.node is not None}
    kept = []
    for ref in seen.finished:
        obj = by_ref.get(ref)
        if obj is None or obj.node is None:
            continue  # no longer desired, or cluster-wide (its label goes on every node at once)
        if walked.state_of(obj.node, obj.state).phase is progress.Phase.PENDING:
            continue  # reset or closed on that node: the run it proves no longer counts
        if judge.recorded(seen, sr_name=wanted.sr_name, state=obj.state, node=obj.node):
            continue  # recorded: the label proves it from now on
        kept.append(ref)
    return frozenset(kept)
