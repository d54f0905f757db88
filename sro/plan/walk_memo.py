"""What one walk hands the next, so a node whose inputs did not change is not walked again.

At a thousand nodes a pass comes every second or so while the fleet converges, and in
each only a tenth of the nodes changed: a pod started, a log tail was read. Walking every
node every pass made the walk the largest part of the planner's time. So the walk keeps,
per node, what it read and what it found, and the next walk reuses a node's phases when
everything it would read again is equal:

* for the whole pass (``pass_key``): the desired objects (the same objects: a render is
  reused while its inputs hold), the kernel groups, the states, each state's cluster-wide
  verdicts, the retry bookkeeping, and whether an upgrade is walking;
* for each node (``node_key``): whether it is reset or upgrading, the uid, template
  generation, update strategy and current revision of each DaemonSet placed on it (those
  of its kernel group and the cluster-wide ones: a kernel's new DaemonSet, or its new
  revision, walks that kernel's nodes again, not every node), the sro pods on it, the
  per-node pods named for it wherever they run, and the log tails read of all of these.

Pods are the cache's own records, replaced (never modified) when they change, so an
unchanged pod compares by identity, at once. Anything else changes the key and the node
is walked as before; the result is the same either way (``tests/unit/plan``: a walk with
the memo equals one without, pass after pass).

The plan adds each node's label, annotation and taint change (``lifecycle.node_changes``,
``Changed``): it depends only on the node's walk and its cached record, so a node whose
walk was reused (the same ``Remembered``) and whose record is the same object as then
gets the change computed then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from sro.model import desired, progress, views
from sro.plan import node_patches

NodeKey = tuple[object, ...]


@dataclass(frozen=True, kw_only=True)
class Remembered:
    """One node's inputs and what the walk found there."""

    key: NodeKey
    states: Mapping[str, progress.NodeState]
    logs: tuple[progress.LogRequest, ...]
    matched: tuple[str, ...] = ()  # ``progress.Walk.matched``


def same(a: Sequence[desired.DesiredObject], b: Sequence[desired.DesiredObject]) -> bool:
    """Whether ``a`` and ``b`` hold the same instances, in order (a render reused)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


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


@dataclass(frozen=True, kw_only=True)
class Memo:
    """A walk's memory: the pass's inputs and every node's (``walk.walk`` makes it)."""

    objects: tuple[desired.DesiredObject, ...] = ()
    key: tuple[object, ...] = ()
    nodes: Mapping[str, Remembered] = field(default_factory=_no_nodes)
    index: object = None
    """The objects as the walk indexed them, their refs included (``judge.Index``), reused
    while they are the same objects."""
    changes: Mapping[str, Changed] = field(default_factory=_no_changes)
    changes_key: tuple[object, ...] = ()
    """What every node's change reads alike (``lifecycle.node_changes``)."""

    def same_objects(self, objects: Sequence[desired.DesiredObject]) -> bool:
        """Whether this memo was made from these objects (``same``)."""
        return same(self.objects, objects)

    def usable(self, objects: Sequence[desired.DesiredObject], key: tuple[object, ...]) -> bool:
        """Whether this memo was made from the same objects and pass inputs."""
        return self.same_objects(objects) and self.key == key

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
