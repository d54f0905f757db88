"""A pass's pods by node, read only where asked.

The reader keeps the pods a pass reads by node (``sro.plan.pods_seen``); a pass then needs
the pods of the few nodes whose walk it builds again, not an index of every pod made anew
(at a thousand nodes, seven thousand pods a pass). Each node's pods come in one order,
by (namespace, name), whichever way the index was made, so a node's walk reads them
alike after a fresh read and after a patch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sro.model import views

Key = tuple[str, str]
"""A pod's (namespace, name)."""


def by_node(pods: Mapping[Key, views.PodView]) -> dict[str, dict[Key, views.PodView]]:
    """``pods`` by the node each runs on ("": not scheduled)."""
    out: dict[str, dict[Key, views.PodView]] = {}
    for key, pod in pods.items():
        out.setdefault(pod.node, {})[key] = pod
    return out


def in_order(pods: Mapping[Key, views.PodView]) -> tuple[views.PodView, ...]:
    """One node's pods, by (namespace, name)."""
    return tuple(pods[key] for key in sorted(pods))


class ByNode(Mapping[str, tuple[views.PodView, ...]]):
    """``Observed.pods_by_node`` over the reader's index: a node's tuple is made when a
    walk first asks for it."""

    def __init__(self, on: Mapping[str, Mapping[Key, views.PodView]]) -> None:
        self._on = on
        self._made: dict[str, tuple[views.PodView, ...]] = {}

    def __getitem__(self, node: str) -> tuple[views.PodView, ...]:
        made: tuple[views.PodView, ...] | None = self.get(node)
        if made is None:
            raise KeyError(node)
        return made

    def get(self, node: str, default: Any = None) -> Any:
        """``Mapping.get`` in one call: every walk of a node reads its pods this way, and
        the generic one calls ``__getitem__`` and catches a ``KeyError`` for a node that
        has none."""
        made = self._made.get(node)
        if made is None:
            pods = self._on.get(node)
            if pods is None:
                return default
            made = self._made[node] = in_order(pods)
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(self._on)

    def __len__(self) -> int:
        return len(self._on)
