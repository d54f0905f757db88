"""Keys waiting for a ready time: a heap where the earliest ready time wins.

Pure. ``push`` of a key already waiting keeps the earlier of the two times (a later
``add_after`` never postpones a key); ``pop_ready(now)`` returns, in ready order,
every key whose time has come. Stale heap entries (superseded by an earlier time)
are skipped lazily rather than searched for.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class DelayHeap(Generic[K]):
    def __init__(self) -> None:
        # Invariant: _ready_at[k] is the one live time of k; heap entries whose time
        # differs from it are stale and dropped when they reach the top.
        self._heap: list[tuple[float, int, K]] = []
        self._ready_at: dict[K, float] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._ready_at)

    def __contains__(self, key: object) -> bool:
        return key in self._ready_at

    def push(self, key: K, ready_at: float) -> None:
        current = self._ready_at.get(key)
        if current is not None and current <= ready_at:
            return
        self._ready_at[key] = ready_at
        heapq.heappush(self._heap, (ready_at, next(self._seq), key))

    def ready_at(self, key: K) -> float | None:
        return self._ready_at.get(key)

    def next_ready(self) -> float | None:
        """The earliest ready time of any waiting key, or None if none waits."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_ready(self, now: float) -> list[K]:
        ready: list[K] = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now:
                return ready
            _, _, key = heapq.heappop(self._heap)
            del self._ready_at[key]
            ready.append(key)

    def clear(self) -> None:
        self._heap.clear()
        self._ready_at.clear()

    def _drop_stale(self) -> None:
        while self._heap:
            ready_at, _, key = self._heap[0]
            if self._ready_at.get(key) == ready_at:
                return
            heapq.heappop(self._heap)
