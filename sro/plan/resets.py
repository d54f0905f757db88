"""Kernel changes (contract section 6): which nodes walk the states again, and when their
new kernel group is recorded.

A node's kernel group is recorded on it (``lifecycle.kernel_annotation``) with its first
label. When the group the render gives the node differs from the record, the kernel
changed: that pass walks every state of the node as Pending (``walk``), which takes its
labels off and deletes its per-node pods (``node_parts``), and records the new group. The
record moves on only with those pods deleted in the same pass: a pass after the record
walks the node as any other, and a validation pod of before the change, still there,
would count as a run on the new kernel.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sro.model import desired, progress
from sro.plan import lifecycle, node_patches
from sro.plan import observed as observed_


def kernel_resets(wanted: desired.DesiredState, seen: observed_.Observed) -> frozenset[str]:
    """Selected nodes whose kernel group differs from the one they were walked with."""
    key = lifecycle.kernel_annotation(wanted.sr_name)
    resets = set()
    for name in wanted.nodes:
        node, group = seen.nodes.get(name), wanted.kernel_groups.get(name)
        # As of sro's own last write: the reset's own patch records the new group.
        recorded = seen.own_annotation(node, key) if node else ""
        if group is not None and recorded and recorded != group.key:
            resets.add(name)
    return frozenset(resets)


def hold_records(
    changes: Sequence[node_patches.NodeChange],
    wanted: desired.DesiredState,
    walked: progress.Walk,
    *,
    reset: frozenset[str],
    closed: Sequence[lifecycle.Deletion],
    sent: Sequence[lifecycle.Deletion],
) -> tuple[node_patches.NodeChange, ...]:
    """``changes`` without the new kernel record of each node reset in this pass whose
    per-node pods' deletion waits for the caches (``lifecycle.fresh_enough``): the next
    pass resets it again. Recorded now, the next pass would walk the node as any other,
    and could take a pod of before the kernel change, not deleted yet, for a run on the
    new kernel."""
    waiting = {d.ref for d in closed} - {d.ref for d in sent}
    nodes = {n for n in reset if any(walked.ref(o) in waiting for o in wanted.by_node.get(n, ()))}
    key = lifecycle.kernel_annotation(wanted.sr_name)
    return tuple(
        dataclasses.replace(c, annotations={k: v for k, v in c.annotations.items() if k != key})
        if c.node in nodes and key in c.annotations
        else c
        for c in changes
    )
