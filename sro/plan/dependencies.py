"""Which of a SpecialResource's dependencies hold it back, and whether they form a cycle.

A dependency is another SpecialResource that must be complete on a node before this one
starts there (the render core turns that into a node-affinity term on the dependency's
``complete`` label, so the waiting itself needs no code). What needs deciding is what to
*say*: a dependency that does not exist, or that does not select some of this one's nodes,
is ``DependencyMissing`` naming them; a cycle is ``DependencyCycle`` on every member, because
no member of a cycle can ever start.

Pure: the caller hands in a summary of every SpecialResource; nothing here reads the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class Peer:
    """What the dependency check needs to know of one SpecialResource."""

    name: str
    dependencies: tuple[str, ...] = ()
    nodes: frozenset[str] = field(default_factory=frozenset)  # selected nodes


@dataclass(frozen=True, kw_only=True)
class DependencyReport:
    """The outcome for one SpecialResource.

    ``absent`` are dependencies with no such SpecialResource; ``uncovered`` maps a
    dependency to the selected nodes of ours it does not select; ``cycle`` is the sorted
    members of the cycle this SpecialResource is on (empty if none); ``waiting`` the nodes
    that cannot start because a dependency will never be complete there.
    """

    absent: tuple[str, ...] = ()
    uncovered: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cycle: tuple[str, ...] = ()
    waiting: frozenset[str] = field(default_factory=frozenset)

    @property
    def ok(self) -> bool:
        return not (self.absent or self.uncovered or self.cycle)

    @property
    def reason(self) -> str:
        """The Degraded reason, or "" when nothing is wrong (a cycle outranks a gap)."""
        if self.cycle:
            return "DependencyCycle"
        if self.absent or self.uncovered:
            return "DependencyMissing"
        return ""

    def message(self, *, limit: int = 5) -> str:
        """One human sentence naming the culprits (at most ``limit`` nodes per dependency)."""
        if self.cycle:
            return "dependency cycle: " + " -> ".join((*self.cycle, self.cycle[0]))
        parts: list[str] = []
        if self.absent:
            parts.append("no SpecialResource named " + ", ".join(self.absent))
        for dep, nodes in sorted(self.uncovered.items()):
            shown = ", ".join(nodes[:limit])
            more = f" and {len(nodes) - limit} more" if len(nodes) > limit else ""
            parts.append(f"{dep} does not select {len(nodes)} node(s): {shown}{more}")
        return "; ".join(parts)


def check(name: str, peers: Mapping[str, Peer]) -> DependencyReport:
    """The dependency report of SpecialResource ``name`` among ``peers`` (which include it)."""
    me = peers[name]
    cycle = _cycle_through(name, peers)
    absent = tuple(sorted({d for d in me.dependencies if d not in peers}))
    uncovered: dict[str, tuple[str, ...]] = {}
    for dep in sorted(set(me.dependencies)):
        other = peers.get(dep)
        if other is None:
            continue
        gap = me.nodes - other.nodes
        if gap:
            uncovered[dep] = tuple(sorted(gap))
    # A cycle or an absent dependency can never complete anywhere: every node waits.
    waiting = me.nodes if cycle or absent else frozenset(n for nodes in uncovered.values() for n in nodes)
    return DependencyReport(absent=absent, uncovered=uncovered, cycle=cycle, waiting=waiting)


def _cycle_through(start: str, peers: Mapping[str, Peer]) -> tuple[str, ...]:
    """The members of a dependency cycle containing ``start``, sorted; () if there is none.

    A node is on a cycle through ``start`` exactly when it is reachable from ``start`` and
    ``start`` is reachable from it, so two reachability sweeps find the whole cycle (the
    strongly connected component) without enumerating paths.
    """
    forward = _reachable(start, lambda n: _deps(n, peers))
    if start not in forward:
        return ()
    reverse_edges: dict[str, set[str]] = {}
    for peer in peers.values():
        for dep in peer.dependencies:
            reverse_edges.setdefault(dep, set()).add(peer.name)
    backward = _reachable(start, lambda n: reverse_edges.get(n, ()))
    return tuple(sorted((forward & backward) | {start}))


def _deps(name: str, peers: Mapping[str, Peer]) -> Iterable[str]:
    peer = peers.get(name)
    return peer.dependencies if peer else ()


def _reachable(start: str, edges: Callable[[str], Iterable[str]]) -> set[str]:
    """Every name reachable from ``start`` in one or more steps (``start`` only via a loop)."""
    seen: set[str] = set()
    stack = list(edges(start))
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(edges(node))
    return seen
