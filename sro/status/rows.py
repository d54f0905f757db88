"""The rows of a walked SpecialResource's status: one per state, one per kernel group.

A status is built every pass, and at a thousand nodes its rows are most of its cost: each
state's row reads the phase counts the walk kept and goes over the nodes only for a failure;
the first node still waiting is the walk's to find (``progress.Walk.first_waiting``: it
noted where each state is stuck, and its nodes are in name order, so the first one
waiting ends the search). Every text is cut to the CRD's bound on it
(``crd_limits``), or the API server would refuse the whole status write.
"""

from __future__ import annotations

from collections import Counter

from sro.model import crd_limits, desired, progress
from sro.status.body import KernelRow, StateRow

# The CRD's bounds (maxItems, maxLength): a longer value would make the API server refuse the write.
FAILING_NODES_MAX = crd_limits.FAILING_NODES_MAX
ROW_MESSAGE_MAX = crd_limits.ROW_MESSAGE_MAX
REASON_MAX = crd_limits.FAILING_REASON_MAX


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, marked with "..." when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def kernel_rows(wanted: desired.DesiredState) -> list[KernelRow]:
    """One row per kernel group among the selected nodes, sorted by kernel then OS (at most
    the CRD's bound on rows and on their lengths)."""
    selected = set(wanted.nodes)
    counts = Counter(
        (group.kernel, group.os.tag) for node, group in wanted.kernel_groups.items() if node in selected
    )
    rows = sorted(counts.items())[: crd_limits.KERNELS_MAX]
    return [
        {"kernel": clip(k, crd_limits.KERNEL_MAX), "os": clip(o, crd_limits.OS_MAX), "nodes": n}
        for (k, o), n in rows
    ]


def state_row(state: str, walked: progress.Walk) -> StateRow:
    """``state``'s row: its phase over the selected nodes, a message naming the first node
    it waits on or how many it failed on, and the first failing nodes."""
    # The walk counted the phases: the nodes are read again only for a failure (this runs
    # for every state, every pass).
    phases = walked.phase_counts(state)
    failed = progress.Phase.FAILED
    failing = (
        sorted((n, states[state]) for n, states in walked.nodes.items() if states[state].phase is failed)
        if phases.get(failed)
        else []
    )
    total, complete = len(walked.nodes), phases.get(progress.Phase.COMPLETE, 0)
    if failing:
        phase = progress.Phase.FAILED
    elif complete == total:
        phase = progress.Phase.COMPLETE
    elif phases.get(progress.Phase.PROGRESSING) or complete:
        phase = progress.Phase.PROGRESSING
    else:
        phase = progress.Phase.PENDING
    message = ""
    if failing:
        message = f"failed on {plural(len(failing), 'node')}"
    elif phase is not progress.Phase.COMPLETE and (first_waiting := walked.first_waiting(state)) is not None:
        waiting, node, first = first_waiting
        more = f" (and {plural(waiting - 1, 'more node')})" if waiting > 1 else ""
        message = f"{node}: {first.reason}{more}"
    return {
        "name": state,
        "phase": str(phase),
        "nodes": {"complete": complete, "total": total},
        "message": clip(message, ROW_MESSAGE_MAX),
        "failingNodes": [
            {"node": n, "reason": clip(ns.reason, REASON_MAX)} for n, ns in failing[:FAILING_NODES_MAX]
        ],
    }
