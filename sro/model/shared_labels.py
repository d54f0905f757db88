"""A node's labels held as values beside keys that nodes alike share.

A real node carries about a hundred labels, and nodes of one pool carry the same keys:
held as one dict each, the keys' table is most of a cached node (about 4 KiB of 5), and
at 5,000 nodes the cache's largest single item. Here a node holds only its values, in
the order of a key tuple held once for every node with the same keys (and the lookup
table that goes with it). A fleet's nodes come in a few dozen key sets, one per pool
and per stage sro's labels have reached; a flood of distinct ones costs at most ``KEPT``
layouts (older ones stay with the nodes that use them, unshared).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator, Mapping
from typing import Any

KEPT = 4096
"""Distinct key sets whose layout is shared (the most recently used)."""


class SharedLabels(Mapping[str, str]):
    """A read-only ``Mapping[str, str]`` of labels whose keys it shares with equal sets."""

    __slots__ = ("_keys", "_slots", "_values")

    def __init__(self, keys: tuple[str, ...], slots: Mapping[str, int], values: tuple[str, ...]) -> None:
        self._keys = keys
        self._slots = slots
        self._values = values

    def __getitem__(self, key: str) -> str:
        return self._values[self._slots[key]]

    def get(self, key: str, default: Any = None) -> Any:
        slot = self._slots.get(key)
        return default if slot is None else self._values[slot]

    def __contains__(self, key: object) -> bool:
        return key in self._slots

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SharedLabels) and other._keys is self._keys:
            return other._values == self._values
        if not isinstance(other, Mapping):
            return NotImplemented
        if len(other) != len(self._keys):
            return False
        # The same keys in the same order (how the API server sends a node's labels every
        # time) compare at C speed; any other order compares as mappings do.
        if tuple(other) == self._keys:
            return tuple(other.values()) == self._values
        return dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]  # a mapping, unhashable like a dict

    def __repr__(self) -> str:
        return repr(dict(self.items()))


@functools.lru_cache(maxsize=KEPT)
def _layout(keys: tuple[str, ...]) -> tuple[tuple[str, ...], Mapping[str, int]]:
    return keys, {key: slot for slot, key in enumerate(keys)}


def shared(mapping: Mapping[Any, Any]) -> SharedLabels:
    """``mapping`` as ``SharedLabels``: every key and value a string, interned (stored once
    however many nodes repeat it), the keys' layout shared with every equal key set."""
    intern = sys.intern
    labels = {intern(str(k)): intern(str(v)) for k, v in mapping.items()}  # keys that print alike: one
    keys, slots = _layout(tuple(labels))
    return SharedLabels(keys, slots, tuple(labels.values()))
