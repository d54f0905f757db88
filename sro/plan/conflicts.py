"""Two SpecialResources driving the same hardware on the same node: who keeps the node.

Two SpecialResources that use the same recipe and select overlapping nodes would install
the same driver twice there. Precedence goes by creation time, then by name, so the answer
never depends on which of the two was edited last or which reconcile ran first: the one
that loses gets ``ConflictingNodeSelector`` naming the other and the overlapping nodes, and
runs on none of them (what it had there is removed, because those nodes simply leave its
selection).

A loser yields the nodes an earlier SpecialResource *selects*, not only those the earlier
one ends up running on: that keeps the rule local to each pair and stable under edits.

Pure: the caller summarises every SpecialResource; nothing here reads the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One SpecialResource's claim on nodes for a recipe."""

    name: str
    recipe: str
    created: str  # metadata.creationTimestamp, RFC 3339 (UTC "Z" strings sort by time)
    nodes: frozenset[str] = field(default_factory=frozenset)

    @property
    def precedence(self) -> tuple[str, str]:
        """Smaller wins: the older, then the alphabetically first."""
        return (self.created, self.name)


@dataclass(frozen=True, kw_only=True)
class ConflictReport:
    """What one SpecialResource loses: each winner's name with the overlapping nodes, sorted."""

    lost_to: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def excluded(self) -> frozenset[str]:
        """Nodes this SpecialResource must not run on."""
        return frozenset(n for nodes in self.lost_to.values() for n in nodes)

    @property
    def ok(self) -> bool:
        return not self.lost_to

    def message(self, *, limit: int = 5) -> str:
        parts = []
        for winner, nodes in sorted(self.lost_to.items()):
            shown = ", ".join(nodes[:limit])
            more = f" and {len(nodes) - limit} more" if len(nodes) > limit else ""
            parts.append(
                f"SpecialResource {winner} uses the same recipe and was created first; "
                f"{len(nodes)} overlapping node(s) left to it: {shown}{more}"
            )
        return "; ".join(parts)


def check(name: str, claims: Iterable[Claim]) -> ConflictReport:
    """The conflict report of SpecialResource ``name`` among ``claims`` (which include it)."""
    by_name: Mapping[str, Claim] = {c.name: c for c in claims}
    me = by_name[name]
    lost: dict[str, tuple[str, ...]] = {}
    for other in by_name.values():
        if other.name == me.name or other.recipe != me.recipe:
            continue
        if other.precedence >= me.precedence:
            continue
        overlap = me.nodes & other.nodes
        if overlap:
            lost[other.name] = tuple(sorted(overlap))
    return ConflictReport(lost_to=lost)


def winners_over(name: str, claims: Iterable[Claim]) -> tuple[str, ...]:
    """Names of the SpecialResources that ``name`` loses nodes to (for Events and requeues)."""
    return tuple(sorted(check(name, claims).lost_to))
