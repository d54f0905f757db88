"""What one walk hands the next, so a node whose inputs did not change is not walked again.

At a thousand nodes a pass comes every second or so while the fleet converges, and in
each only a tenth of the nodes changed: a pod started, a log tail was read. Walking every
node every pass made the walk the largest part of the planner's time. So the walk keeps,
per node, what it read and what it found, and the next walk reuses a node's phases when
everything it would read again is equal:

* for the whole pass (``pass_key``): the states, which of them wait for logs, each
  state's cluster-wide verdicts, the retry bookkeeping, and whether an upgrade is walking;
* for each node (``node_key``): whether it is reset or upgrading, its kernel group, the
  DaemonSets placed on it (those of its group and the cluster-wide ones) with the uid,
  template generation, update strategy and current revision of each live one, its own
  per-node objects, the sro pods on it, the per-node pods named for it wherever they
  run, and the log tails read of all of these.

A new render (a kernel change, a node joining) is no reason to walk every node again:
``interned`` hands the planner the last walk's instance of every object that did not
change, so the desired objects in a node's key compare by identity, at once, and only the
nodes whose own objects changed (the kernel's new DaemonSet, a new node's pods) are walked.
Pods are the cache's own records, replaced (never modified) when they change, so an
unchanged pod compares by identity too. Anything else changes the key and the node is
walked as before; the result is the same either way (``tests/unit/plan``: a walk with the
memo equals one without, pass after pass and render after render).

The plan adds each node's label, annotation and taint change (``lifecycle.node_changes``,
``Changed``): it depends only on the node's walk (its kernel group included) and its
cached record, so a node whose walk was reused (the same ``Remembered``) and whose record
is the same object as then gets the change computed then.

Building every node's key, every pass, was itself a third of the walk at a thousand
nodes. So when the engine can say what the node and pod caches changed since the memo's
pass (``Touched``), the walk builds the key only of the nodes that news concerns
(``sro.plan.walk_touched``); every other node's remembered key still says what it would
read. The memo keeps, for that, the engine memory the walk read (log tails, node answers)
and the pods proven finished.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from types import MappingProxyType

from sro.model import desired, progress, views
from sro.plan import node_patches

NodeKey = tuple[object, ...]


@dataclass(frozen=True, kw_only=True)
class Touched:
    """What the caches changed since the pass whose walk made the memo (the engine's
    journal of its stores, ``Observed.touched``): the nodes whose record changed (added,
    modified or deleted), the pods that changed, by namespace and name, and the nodes
    those pods ran on before and after."""

    nodes: frozenset[str] = frozenset()
    pods: frozenset[tuple[str, str]] = frozenset()
    pod_nodes: frozenset[str] = frozenset()


@dataclass(frozen=True, kw_only=True)
class Remembered:
    """One node's inputs and what the walk found there."""

    key: NodeKey
    states: Mapping[str, progress.NodeState]
    logs: tuple[progress.LogRequest, ...]
    matched: tuple[str, ...] = ()  # ``progress.Walk.matched``

    @cached_property
    def phases(self) -> tuple[tuple[str, progress.Phase], ...]:
        """Each state with its phase here: what the walk counts of a node it reuses, pass
        after pass (one ``Counter`` counts them all at C speed, not a state at a time)."""
        return _shared(tuple((state, ns.phase) for state, ns in self.states.items()))

    @cached_property
    def stuck(self) -> tuple[str, ...]:
        """The states stuck here (on something that needs a human): almost always none."""
        return tuple(state for state, ns in self.states.items() if ns.stuck)

    @cached_property
    def complete(self) -> bool:
        """Whether every state is complete here (the status counts such nodes every pass)."""
        return all(phase is progress.Phase.COMPLETE for _, phase in self.phases)


@lru_cache(maxsize=views.KEPT)
def _shared(phases: tuple[tuple[str, progress.Phase], ...]) -> tuple[tuple[str, progress.Phase], ...]:
    """``phases`` held once however many nodes stand the same (a fleet stands in a few
    dozen ways; each node holding its own tuples costs about 600 bytes a node)."""
    return phases


def same(a: Sequence[desired.DesiredObject], b: Sequence[desired.DesiredObject]) -> bool:
    """Whether ``a`` and ``b`` hold the same instances, in order (a render reused)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def interned(wanted: desired.DesiredState, memo: Memo) -> desired.DesiredState:
    """``wanted`` with each object equal to the one of the last plan's of the same ref
    replaced by that instance: after a kernel change every unchanged object is the last
    walk's, and compares by identity in the node keys. The engine hands the same render
    again while its inputs hold: that gets the same answer again, at once."""
    raw, kept = memo.render
    if raw is wanted and kept is not None:
        return kept
    last = memo.objects
    objects = wanted.objects
    if not last or same(objects, last):
        return wanted
    before = {o.ref: o for o in last}
    ours = tuple(
        old if (old := before.get(o.ref)) is not None and (old is o or old == o) else o for o in objects
    )
    return wanted if same(ours, objects) else replace(wanted, objects=ours)


@dataclass(frozen=True, kw_only=True)
class Changed:
    """One node's change as a plan computed it (``None``: nothing to change), and from what."""

    view: views.NodeView | None
    walked: Remembered
    change: node_patches.NodeChange | None


def _no_nodes() -> Mapping[str, Remembered]:
    return MappingProxyType({})


def _no_changes() -> Mapping[str, Changed]:
    return MappingProxyType({})


def _nothing() -> Mapping[str, object]:
    return MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class Memo:
    """A walk's memory: the pass's inputs and every node's (``walk.walk`` makes it)."""

    objects: tuple[desired.DesiredObject, ...] = ()
    """The objects walked: the next plan's ``interned`` keeps their instances."""
    key: tuple[object, ...] = ()
    nodes: Mapping[str, Remembered] = field(default_factory=_no_nodes)
    index: object = None
    """The objects as the walk indexed them, their refs included (``judge.Index``), reused
    while they are the same objects."""
    changes: Mapping[str, Changed] = field(default_factory=_no_changes)
    changes_key: tuple[object, ...] = ()
    """What every node's change reads alike (``lifecycle.node_changes``)."""
    render: tuple[desired.DesiredState | None, desired.DesiredState | None] = (None, None)
    """The last plan's render as the engine handed it, and as ``interned`` made it."""
    logs: Mapping[str, object] = field(default_factory=_nothing)
    """The log tails the walk read, by pod uid (``Observed.logs``): each entry compared by
    identity with the next pass's, as the engine replaces a pod's tails when it reads them."""
    answers: Mapping[str, object] = field(default_factory=_nothing)
    """What node patches had returned, by node (``Observed.node_answers``), likewise."""
    finished: frozenset[desired.ObjectRef] = frozenset()
    """The pods the walk took as finished (``Observed.finished``)."""
    parts: Mapping[str, object] = field(default_factory=_nothing)
    """Each node's part of the plan's writes (``sro.plan.node_parts.Part``), by node."""

    def recall(self, node: str, key: NodeKey) -> Remembered | None:
        known = self.nodes.get(node)
        return known if known is not None and known.key == key else None

    def changed(
        self, node: str, *, key: tuple[object, ...], view: views.NodeView | None, walked: Remembered | None
    ) -> Changed | None:
        """The change this memo holds for ``node``, if computed from the same pass inputs,
        the same walk record and the same cached record (identity: both are replaced, never
        modified, when anything in them changes)."""
        known = self.changes.get(node)
        if known is None or walked is None or known.walked is not walked or known.view is not view:
            return None
        return known if self.changes_key == key else None


EMPTY = Memo()
