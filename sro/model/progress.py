"""Where each node stands in each state: the vocabulary the planner and the status share.

The planner (``sro.plan.walk``) computes a ``Walk``; the status builders
(``sro.status.summary``) turn one into rows and conditions. Both read these records, so
they live below both, and neither imports the other for them.

Pure data, frozen.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from sro.model import desired


class Phase(enum.StrEnum):
    """One state's phase on one node (and, summarised, in a status row)."""

    PENDING = "Pending"
    PROGRESSING = "Progressing"
    COMPLETE = "Complete"
    FAILED = "Failed"


@dataclass(frozen=True, kw_only=True, order=True)
class LogRequest:
    """A pod whose container log tails the engine must fetch (``wait-for-logs``)."""

    namespace: str
    name: str
    uid: str
    containers: tuple[str, ...]
    pattern: str = ""  # the wait-for-logs pattern the tails must match


@dataclass(frozen=True, kw_only=True)
class NodeState:
    """One state on one node."""

    phase: Phase
    reason: str = ""
    stuck: bool = False  # progressing, but on something that needs a human

    @property
    def open(self) -> bool:
        return self.phase is not Phase.PENDING


PENDING = NodeState(phase=Phase.PENDING)


@dataclass(frozen=True, kw_only=True)
class Walk:
    """The phase of every state on every selected node, and the logs needed to decide."""

    order: tuple[str, ...]  # states, dependencies first, recipe order among equals
    nodes: Mapping[str, Mapping[str, NodeState]]  # node -> state -> NodeState
    logs_needed: tuple[LogRequest, ...] = ()
    # node -> uids of its pods whose wait-for-logs match is known (the node's record of them)
    matched: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)
    # state -> phase -> nodes, counted while walking (status rows and the per-state node
    # gauge read it; empty for a walk built by hand, which ``phase_counts`` then counts).
    phases: Mapping[str, Mapping[Phase, int]] = field(default_factory=dict, compare=False, repr=False)
    # How many nodes have every state complete, counted while walking (None: a walk built
    # by hand, whose nodes ``complete_nodes`` then reads).
    complete: int | None = field(default=None, compare=False, repr=False)
    # state -> the first node by name where it is stuck, and whether ``nodes`` are in name
    # order, noted while walking (None, False: a walk built by hand). With both, a status
    # row finds the first node a state waits on without reading every node
    # (``first_waiting``).
    stuck_first: Mapping[str, str] | None = field(default=None, compare=False, repr=False)
    by_name: bool = field(default=False, compare=False, repr=False)
    # Each desired object's ref, computed once (``DesiredObject.ref`` builds it every time).
    refs: Mapping[int, tuple[desired.DesiredObject, desired.ObjectRef]] = field(
        default_factory=dict, compare=False, repr=False
    )
    # What the next walk may reuse (``sro.plan.walk_memo.Memo``), kept by the engine.
    memo: object = field(default=None, compare=False, repr=False)

    def ref(self, obj: desired.DesiredObject) -> desired.ObjectRef:
        known = self.refs.get(id(obj))
        return known[1] if known is not None and known[0] is obj else obj.ref

    def state_of(self, node: str, state: str) -> NodeState:
        """``state`` on ``node``; Pending for a node or state the walk does not know."""
        return self.nodes.get(node, {}).get(state, PENDING)

    def open_anywhere(self, state: str) -> bool:
        if self.phases:  # counted while walking: no walk over every node again
            return any(n for phase, n in self.phases.get(state, {}).items() if phase is not Phase.PENDING)
        return any(states[state].open for states in self.nodes.values())

    def complete_states(self, node: str) -> tuple[str, ...]:
        states = self.nodes[node]
        return tuple(s for s in self.order if states[s].phase is Phase.COMPLETE)

    def phase_counts(self, state: str) -> Mapping[Phase, int]:
        """On how many nodes ``state`` is in each phase (zero phases left out)."""
        if self.phases:
            return self.phases.get(state, {})
        return Counter(states[state].phase for states in self.nodes.values() if state in states)

    def first_waiting(self, state: str) -> tuple[int, str, NodeState] | None:
        """On how many nodes ``state`` is not complete, and the first of them by name (the
        first where it is stuck if any is); None when it is complete everywhere. A walk
        that noted where states are stuck, over nodes in name order, stops at that node:
        a status is built every pass, for every state, and a full read of a large fleet
        for each was a tenth of a converging operator's time."""
        complete = Phase.COMPLETE
        waiting = len(self.nodes) - self.phase_counts(state).get(complete, 0)
        if waiting <= 0:
            return None
        if self.stuck_first is not None and self.by_name:
            node = self.stuck_first.get(state)
            if node is None:
                node = next(n for n, states in self.nodes.items() if states[state].phase is not complete)
            return waiting, node, self.nodes[node][state]
        rows = [(n, states[state]) for n, states in self.nodes.items() if states[state].phase is not complete]
        node, ns = min((r for r in rows if r[1].stuck), default=None, key=_name) or min(rows, key=_name)
        return len(rows), node, ns

    def complete_nodes(self) -> int:
        """On how many nodes every state is complete."""
        if self.complete is not None:
            return self.complete
        return sum(1 for node in self.nodes if self.all_complete(node))

    def all_complete(self, node: str) -> bool:
        return all(ns.phase is Phase.COMPLETE for ns in self.nodes[node].values())


def _name(row: tuple[str, NodeState]) -> str:
    return row[0]
