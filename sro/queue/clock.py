"""Time as the queue and the watch backoff see it, injected so tests can step it.

Only ``now()`` is needed: waiting is done with asyncio on the real loop, and the
queue recomputes what is ready from ``now()`` every time it wakes up.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """A monotonic source of seconds."""

    def now(self) -> float: ...


class MonotonicClock:
    """The real clock: ``time.monotonic``."""

    def now(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told to; for tests and simulations."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time does not go backwards")
        self._now += seconds
